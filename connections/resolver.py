"""The one answer to "which outbound headers for this caller, this server, this purpose" (a user's call,
discovery): nothing, the shared headers, or the caller's own credential. The gateway asks it for every
request; opened credentials are cached in this process (memory only) until the auth epoch moves, which
any connection made, replaced or removed does."""

from __future__ import annotations

from collections import OrderedDict
from threading import Lock

from channels.db import database_sync_to_async

from connections.choices import Purpose
from connections.models import UpstreamCredential
from connections.sealed import open_for
from core.sealing import Unsealable
from servers.choices import UpstreamAuth
from servers.upstream_auth import CredentialMissing, secret_header

CACHED = 10_000


def connect_path(server) -> str:
    return f"/connections{server.path}"


def headers_for(server, principal, purpose: str = Purpose.USER) -> dict[str, str]:
    """The outbound headers of `server` for `principal` (or, for discovery, the registry's own
    connection): raises CredentialMissing when a credential is needed and there is none usable."""
    if server.upstream_auth == UpstreamAuth.NONE:
        return {}
    if server.upstream_auth == UpstreamAuth.SHARED_HEADERS:
        return {str(k): str(v) for k, v in (server.headers or {}).items()}
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
    try:
        values = open_for(credential, server)
    except Unsealable:
        raise CredentialMissing(
            server.path,
            f"{server.path} changed since you connected it: connect it again, then try again.",
            where,
        ) from None
    return secret_header(server.user_secret_header, values["secret"])


class HeaderCache:
    """Opened headers by (server, its last change, user), valid in one auth epoch."""

    def __init__(self):
        self._lock = Lock()
        self._entries: OrderedDict = OrderedDict()

    def get(self, key, epoch):
        with self._lock:
            found = self._entries.get(key)
            if found is None or found[0] != epoch:
                return None
            self._entries.move_to_end(key)
            return found[1]

    def put(self, key, epoch, headers: dict) -> None:
        with self._lock:
            self._entries[key] = (epoch, headers)
            self._entries.move_to_end(key)
            while len(self._entries) > CACHED:
                self._entries.popitem(last=False)


HEADERS = HeaderCache()


async def gateway_headers(server, principal, epoch) -> dict[str, str]:
    """headers_for a caller's request through the gateway, from this process's cache when it can."""
    if server.upstream_auth in (UpstreamAuth.NONE, UpstreamAuth.SHARED_HEADERS):
        return headers_for(server, principal)
    key = (server.pk, server.updated_at, principal.user.pk if principal.user is not None else None)
    headers = HEADERS.get(key, epoch)
    if headers is None:
        headers = await database_sync_to_async(headers_for)(server, principal)
        HEADERS.put(key, epoch, headers)
    return headers


def discovery_headers(server) -> dict[str, str]:
    """The headers of the registry's own health checks and tool discovery
    (settings.UPSTREAM_DISCOVERY_HEADERS)."""
    return headers_for(server, None, Purpose.DISCOVERY)
