"""The one answer to "which outbound headers for this caller, this target, this purpose" (a user's call,
discovery), for every kind of target that holds an upstream credential (a server, an A2A agent; a virtual
server asks it for each member): nothing, the operator's shared headers (sealed at rest:
servers/shared_headers.py), or the caller's own credential (their secret in the target's header, or their
sign-in's access token as `Authorization: Bearer`, refreshed when it expires and when the upstream refuses
it: connections/refresh.py; or a token exchanged for their company identity, again when refused:
connections/cross_app.py). Refresh-and-retry after an upstream's 401 lives here (`gateway_headers_again`),
so every carrier gets it alike. The gateway asks it for every request; opened
credentials are cached in this process (memory only) until the auth epoch moves, which any connection
made, replaced or removed does, and a sign-in's no longer than its token is fresh."""

from __future__ import annotations

import time
from collections import OrderedDict
from datetime import timedelta
from threading import Lock

from channels.db import database_sync_to_async
from django.utils import timezone

from connections import cross_app, refresh
from connections.choices import Purpose
from connections.models import UpstreamCredential, of_target
from connections.sealed import open_for
from connections.services import credential_step_up
from core.sealing import Unsealable
from servers.choices import SIGN_IN_MODES, UpstreamAuth
from servers.shared_headers import SharedHeadersLost
from servers.upstream_auth import CredentialMissing, CredentialUnavailable, secret_header

FOREVER = float("inf")

CACHED = 10_000


def connect_path(target) -> str:
    return f"/connections{target.path}"


def headers_for(target, principal, purpose: str = Purpose.USER) -> dict[str, str]:
    """The outbound headers of `target` for `principal` (or, for discovery, the registry's own
    connection): raises CredentialMissing when a credential is needed and there is none usable."""
    return _opened(target, principal, purpose)[0]


def _opened(target, principal, purpose: str, rejected: str | None = None) -> tuple[dict[str, str], float]:
    """(headers_for, until when on the monotonic clock they may be reused)."""
    if target.upstream_auth == UpstreamAuth.NONE:
        return {}, FOREVER
    if target.upstream_auth == UpstreamAuth.SHARED_HEADERS:
        try:
            return target.shared_headers(), FOREVER
        except SharedHeadersLost:
            raise CredentialMissing(
                target.path,
                f"The shared credential of {target.path} no longer opens (its address changed behind the "
                "registry's back, or its key is gone): an operator enters it again.",
                None,
            ) from None
    if target.upstream_auth == UpstreamAuth.CROSS_APP_ACCESS:
        return cross_app.headers(target, _person(target, principal, purpose), rejected=rejected)
    credential, where = _credential(target, principal, purpose)
    try:
        values = open_for(credential, target)
    except Unsealable:
        raise CredentialMissing(
            target.path,
            f"{target.path} changed since you connected it: connect it again, then try again.",
            where,
        ) from None
    if target.upstream_auth == UpstreamAuth.USER_SECRET:
        return secret_header(target.user_secret_header, values["secret"]), FOREVER
    try:
        values = refresh.fresh(credential, target, values, rejected=rejected)
    except refresh.SignInLost:
        raise CredentialMissing(
            target.path, f"Your sign-in to {target.path} has ended: sign in again, then try again.", where
        ) from None
    except refresh.SignInUnavailable as unavailable:
        raise CredentialUnavailable(
            f"Your sign-in to {target.path} could not be refreshed: {unavailable}"
        ) from None
    return {"Authorization": f"Bearer {values['access_token']}"}, _fresh_until(credential)


def _fresh_until(credential) -> float:
    if credential.expires_at is None:
        return FOREVER
    left = credential.expires_at - timedelta(seconds=refresh.REFRESH_MARGIN_SECONDS) - timezone.now()
    return time.monotonic() + left.total_seconds()


def _credential(target, principal, purpose: str) -> tuple[UpstreamCredential, str | None]:
    """The stored credential for the request, and where its user connects one (CredentialMissing)."""
    if purpose == Purpose.DISCOVERY:
        credential = UpstreamCredential.objects.filter(
            **of_target(target), user=None, purpose=Purpose.DISCOVERY
        ).first()
        missing = f"{target.path} needs a discovery connection (made by an administrator in the console)."
        where = None
    else:
        user = _person(target, principal, purpose)
        credential = UpstreamCredential.objects.filter(
            **of_target(target), user=user, purpose=Purpose.USER
        ).first()
        missing = f"{target.path} needs your own credential: connect it, then try again."
        where = connect_path(target)
    if credential is None:
        raise CredentialMissing(target.path, missing, where)
    return credential, where


def _person(target, principal, purpose: str):
    """The user whose own credential a request needs: a person with a registry account (CredentialMissing
    for service accounts, callers without an account and the registry's own discovery of a target reached
    with each user's company identity)."""
    user = principal.user if principal is not None else None
    if purpose == Purpose.DISCOVERY or user is None or user.is_service_account:
        raise CredentialMissing(
            target.path,
            f"{target.path} needs each user's own credential; service accounts and callers without a "
            "registry account can use only servers with no credential or shared headers.",
            None,
        )
    return user


class HeaderCache:
    """Opened headers by (target, its last change, user), valid in one auth epoch."""

    def __init__(self):
        self._lock = Lock()
        self._entries: OrderedDict = OrderedDict()

    def get(self, key, epoch):
        with self._lock:
            found = self._entries.get(key)
            if found is None or found[0] != epoch or found[2] <= time.monotonic():
                return None
            self._entries.move_to_end(key)
            return found[1]

    def drop(self, key) -> None:
        with self._lock:
            self._entries.pop(key, None)

    def put(self, key, epoch, headers: dict, until: float = FOREVER) -> None:
        with self._lock:
            self._entries[key] = (epoch, headers, until)
            self._entries.move_to_end(key)
            while len(self._entries) > CACHED:
                self._entries.popitem(last=False)


HEADERS = HeaderCache()


async def gateway_headers(target, principal, epoch) -> dict[str, str]:
    """headers_for a caller's request through the gateway, from this process's cache when it can
    (CredentialMissing, CredentialUnavailable)."""
    if target.upstream_auth in (UpstreamAuth.NONE, UpstreamAuth.SHARED_HEADERS):
        return headers_for(target, principal)
    key = _key(target, principal)
    headers = HEADERS.get(key, epoch)
    if headers is None:
        headers, until = await database_sync_to_async(_opened)(target, principal, Purpose.USER)
        HEADERS.put(key, epoch, headers, until)
    return headers


async def gateway_headers_after_refusal(target, principal, epoch, refused: dict[str, str]) -> dict[str, str]:
    """The headers to try once more after the upstream answered 401 to `refused`: a sign-in refreshed
    (or the one another process refreshed meanwhile). CredentialMissing when there is none to try."""
    token = refused.get("Authorization", "").removeprefix("Bearer ")
    if target.upstream_auth not in SIGN_IN_MODES or not token:
        raise CredentialMissing(target.path, f"{target.path} refused your credential.", connect_path(target))
    try:
        headers, until = await database_sync_to_async(_opened)(target, principal, Purpose.USER, token)
    except CredentialMissing:
        HEADERS.drop(_key(target, principal))  # gone here at once; elsewhere when the epoch moves
        raise
    HEADERS.put(_key(target, principal), epoch, headers, until)
    return headers


async def gateway_headers_again(
    target,
    principal,
    epoch,
    credential: dict[str, str],
    status: int,
    scopes: str,
    stronger_login: bool = False,
):
    """The credential to try once more after a target refused the caller's sign-in with `status` (every
    target kind the gateway carries asks this, so each refreshes and retries alike): a refreshed token
    after a 401 (CredentialMissing when the sign-in is gone); after a 403 asking for more scope, none
    (CredentialMissing: the caller signs in again, asked for `scopes` too); after a 401 asking for a
    stronger login at the caller's identity provider (`stronger_login`), none (CredentialMissing: the caller
    logs in again)."""
    if stronger_login and target.upstream_auth == UpstreamAuth.CROSS_APP_ACCESS:
        raise cross_app.step_up(target)
    if status == 403:
        raise await step_up(target, principal, scopes)
    return await gateway_headers_after_refusal(target, principal, epoch, credential)


async def step_up(target, principal, scopes: str) -> CredentialMissing:
    """The upstream wants more scope than the caller's sign-in has: the next sign-in asks for `scopes`
    too; what the caller is told."""

    def record():
        credential = UpstreamCredential.objects.filter(
            **of_target(target), user=principal.user, purpose=Purpose.USER
        ).first()
        if credential is not None:
            credential_step_up(credential=credential, scopes=scopes)

    if principal.user is not None:
        await database_sync_to_async(record)()
    return CredentialMissing(
        target.path,
        f"{target.path} needs more permission than your sign-in gave ({scopes or 'a larger scope'}): sign in "
        "again, then try again.",
        connect_path(target),
    )


def _key(target, principal):
    user = principal.user.pk if principal.user is not None else None
    return (target.TARGET_KIND, target.pk, target.updated_at, user)


def discovery_headers(target) -> dict[str, str]:
    """The headers of the registry's own health checks and tool discovery (the targets' registry gives
    it to servers/health.py and agents/health.py: core/targets.py)."""
    return headers_for(target, None, Purpose.DISCOVERY)
