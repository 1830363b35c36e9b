"""The pipeline's exchange stage, the same for every target kind: the credential the one resolver gives
for the target and the caller (connections/resolver.py), sent only to the origin of the target's own URL;
the fair-share slot every exchange holds (gateway/fair_share.py), released as the answer's last message
goes; the exchange itself (the adapter's `attempt`); and, when the upstream refuses the caller's sign-in,
one refresh and one retry.

What differs by kind stays with the adapter: how it sends and answers (`attempt(credential, send)`) and
how it words a refusal of the fair share (`over_share(refusal)`). The resolver's exceptions
(CredentialMissing, SignInRefused once the retry is refused too, CredentialUnavailable) reach the adapter,
which asks for the connection or refuses in its protocol.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from connections.resolver import gateway_headers, gateway_headers_again
from core.public_url import origin_of
from gateway import fair_share, sessions
from gateway.routing import Refusal
from gateway.sign_in import SignInRefused
from servers.upstream_auth import CredentialUnavailable

T = TypeVar("T")
ELSEWHERE = (
    "{path} is reached at another address than its URL here; the registry sends its credential only to "
    "{origin}."
)


async def carried(
    target,
    principal,
    epoch,
    url: str,
    attempt: Callable[[dict[str, str], object], Awaitable[T]],
    over_share: Callable[[Refusal], Awaitable[T]],
    send=None,
) -> T:
    """What `attempt(credential, send)` gives, sent to `url` (an address of `target`) for `principal`;
    `send` (the ASGI send of the client's answer, when there is one) releases the slot as it ends."""
    credential = await gateway_headers(target, principal, epoch)
    if credential and origin_of(url) != origin_of(target.upstream_url):
        raise CredentialUnavailable(ELSEWHERE.format(path=target.path, origin=origin_of(target.upstream_url)))
    try:
        held = fair_share.slot(sessions.owner(principal), url)
    except Refusal as full:
        return await over_share(full)
    with held:
        send = held.ending(send) if send is not None else None
        try:
            return await attempt(credential, send)
        except SignInRefused as refused:  # once more, with a refreshed sign-in
            again = await gateway_headers_again(
                target, principal, epoch, credential, refused.status, refused.scope, refused.stronger_login
            )
            return await attempt(again, send)
