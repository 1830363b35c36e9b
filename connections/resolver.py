"""The one answer to "which outbound headers for this caller, this server, this purpose" (a user's call,
discovery): nothing, the shared headers, or the caller's own credential (their secret in the server's
header, or their sign-in's access token as `Authorization: Bearer`, refreshed when it expires and when
the upstream refuses it: connections/refresh.py). The gateway asks it for every request; opened
credentials are cached in this process (memory only) until the auth epoch moves, which any connection
made, replaced or removed does, and a sign-in's no longer than its token is fresh."""

from __future__ import annotations

import time
from collections import OrderedDict
from datetime import timedelta
from threading import Lock

from channels.db import database_sync_to_async
from django.utils import timezone

from connections import refresh
from connections.choices import Purpose
from connections.models import UpstreamCredential
from connections.sealed import open_for
from connections.services import credential_step_up
from core.sealing import Unsealable
from servers.choices import UpstreamAuth
from servers.upstream_auth import CredentialMissing, CredentialUnavailable, secret_header

FOREVER = float("inf")

CACHED = 10_000


def connect_path(server) -> str:
    return f"/connections{server.path}"


def headers_for(server, principal, purpose: str = Purpose.USER) -> dict[str, str]:
    """The outbound headers of `server` for `principal` (or, for discovery, the registry's own
    connection): raises CredentialMissing when a credential is needed and there is none usable."""
    return _opened(server, principal, purpose)[0]


def _opened(server, principal, purpose: str, rejected: str | None = None) -> tuple[dict[str, str], float]:
    """(headers_for, until when on the monotonic clock they may be reused)."""
    if server.upstream_auth == UpstreamAuth.NONE:
        return {}, FOREVER
    if server.upstream_auth == UpstreamAuth.SHARED_HEADERS:
        return {str(k): str(v) for k, v in (server.headers or {}).items()}, FOREVER
    credential, where = _credential(server, principal, purpose)
    try:
        values = open_for(credential, server)
    except Unsealable:
        raise CredentialMissing(
            server.path,
            f"{server.path} changed since you connected it: connect it again, then try again.",
            where,
        ) from None
    if server.upstream_auth == UpstreamAuth.USER_SECRET:
        return secret_header(server.user_secret_header, values["secret"]), FOREVER
    try:
        values = refresh.fresh(credential, server, values, rejected=rejected)
    except refresh.SignInLost:
        raise CredentialMissing(
            server.path, f"Your sign-in to {server.path} has ended: sign in again, then try again.", where
        ) from None
    except refresh.SignInUnavailable as unavailable:
        raise CredentialUnavailable(
            f"Your sign-in to {server.path} could not be refreshed: {unavailable}"
        ) from None
    return {"Authorization": f"Bearer {values['access_token']}"}, _fresh_until(credential)


def _fresh_until(credential) -> float:
    if credential.expires_at is None:
        return FOREVER
    left = credential.expires_at - timedelta(seconds=refresh.REFRESH_MARGIN_SECONDS) - timezone.now()
    return time.monotonic() + left.total_seconds()


def _credential(server, principal, purpose: str) -> tuple[UpstreamCredential, str | None]:
    """The stored credential for the request, and where its user connects one (CredentialMissing)."""
    if purpose == Purpose.DISCOVERY:
        credential = UpstreamCredential.objects.filter(
            server=server, user=None, purpose=Purpose.DISCOVERY
        ).first()
        missing = f"{server.path} needs a discovery connection (made by an administrator in the console)."
        where = None
    else:
        user = principal.user
        if user is None or user.is_service_account:
            raise CredentialMissing(
                server.path,
                f"{server.path} needs each user's own credential; service accounts and callers without a "
                "registry account can use only servers with no credential or shared headers.",
                None,
            )
        credential = UpstreamCredential.objects.filter(server=server, user=user, purpose=Purpose.USER).first()
        missing = f"{server.path} needs your own credential: connect it, then try again."
        where = connect_path(server)
    if credential is None:
        raise CredentialMissing(server.path, missing, where)
    return credential, where


class HeaderCache:
    """Opened headers by (server, its last change, user), valid in one auth epoch."""

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


async def gateway_headers(server, principal, epoch) -> dict[str, str]:
    """headers_for a caller's request through the gateway, from this process's cache when it can
    (CredentialMissing, CredentialUnavailable)."""
    if server.upstream_auth in (UpstreamAuth.NONE, UpstreamAuth.SHARED_HEADERS):
        return headers_for(server, principal)
    key = _key(server, principal)
    headers = HEADERS.get(key, epoch)
    if headers is None:
        headers, until = await database_sync_to_async(_opened)(server, principal, Purpose.USER)
        HEADERS.put(key, epoch, headers, until)
    return headers


async def gateway_headers_after_refusal(server, principal, epoch, refused: dict[str, str]) -> dict[str, str]:
    """The headers to try once more after the upstream answered 401 to `refused`: a sign-in refreshed
    (or the one another process refreshed meanwhile). CredentialMissing when there is none to try."""
    token = refused.get("Authorization", "").removeprefix("Bearer ")
    if server.upstream_auth != UpstreamAuth.USER_OAUTH or not token:
        raise CredentialMissing(server.path, f"{server.path} refused your credential.", connect_path(server))
    try:
        headers, until = await database_sync_to_async(_opened)(server, principal, Purpose.USER, token)
    except CredentialMissing:
        HEADERS.drop(_key(server, principal))  # gone here at once; elsewhere when the epoch moves
        raise
    HEADERS.put(_key(server, principal), epoch, headers, until)
    return headers


async def gateway_headers_again(
    server, principal, epoch, credential: dict[str, str], status: int, scopes: str
):
    """The credential to try once more after a server refused the caller's sign-in with `status` (every
    target kind the gateway carries asks this, so each refreshes and retries alike): a refreshed token
    after a 401 (CredentialMissing when the sign-in is gone); after a 403 asking for more scope, none
    (CredentialMissing: the caller signs in again, asked for `scopes` too)."""
    if status == 403:
        raise await step_up(server, principal, scopes)
    return await gateway_headers_after_refusal(server, principal, epoch, credential)


async def step_up(server, principal, scopes: str) -> CredentialMissing:
    """The upstream wants more scope than the caller's sign-in has: the next sign-in asks for `scopes`
    too; what the caller is told."""

    def record():
        credential = UpstreamCredential.objects.filter(
            server=server, user=principal.user, purpose=Purpose.USER
        ).first()
        if credential is not None:
            credential_step_up(credential=credential, scopes=scopes)

    if principal.user is not None:
        await database_sync_to_async(record)()
    return CredentialMissing(
        server.path,
        f"{server.path} needs more permission than your sign-in gave ({scopes or 'a larger scope'}): sign in "
        "again, then try again.",
        connect_path(server),
    )


def _key(server, principal):
    return (server.pk, server.updated_at, principal.user.pk if principal.user is not None else None)


def discovery_headers(server) -> dict[str, str]:
    """The headers of the registry's own health checks and tool discovery (the targets' registry gives
    it to servers/health.py: core/targets.py)."""
    return headers_for(server, None, Purpose.DISCOVERY)
