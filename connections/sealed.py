"""What a stored credential is bound to: its associated data (core/sealing.py) names the user, the server,
the purpose, and the server's mode and origin when it was connected. Opening it under the server as it is
now fails when any of them changed, so a credential never reaches an address it was not given for."""

import json

from core import sealing
from core.public_url import origin_of


def context_of(*, server, user_id, purpose: str, mode: str, origin: str) -> str:
    return f"upstream-credential|server={server.pk}|user={user_id or '-'}|{purpose}|{mode}|{origin}"


def seal_for(*, server, user_id, purpose: str, values: dict) -> tuple[str, str, str]:
    """(sealed, mode, origin) of `values` for this server as it is now."""
    origin = origin_of(server.proxy_pass_url)
    context = context_of(
        server=server, user_id=user_id, purpose=purpose, mode=server.upstream_auth, origin=origin
    )
    return sealing.seal(json.dumps(values).encode(), context=context), server.upstream_auth, origin


def fits(credential, server) -> bool:
    """Whether `credential` was connected for `server` as it is now (same mode, same origin)."""
    return credential.mode == server.upstream_auth and credential.origin == origin_of(server.proxy_pass_url)


def open_for(credential, server) -> dict:
    """The values of `credential` if it still belongs to `server` as it is now; Unsealable otherwise."""
    if not fits(credential, server):
        raise sealing.Unsealable("the server's mode or origin changed since it was connected")
    return json.loads(sealing.unseal(credential.sealed, context=_context(credential, server)))


def open_as_connected(credential) -> dict:
    """The values of `credential` under what it was connected for, whatever the server is now: only to
    revoke it where it came from (connections/services.py)."""
    return json.loads(sealing.unseal(credential.sealed, context=_context(credential, credential.server)))


def resealed(credential, server) -> str:
    """`credential` sealed again under the newest key (Unsealable when it no longer opens)."""
    context = _context(credential, server)
    return sealing.seal(sealing.unseal(credential.sealed, context=context), context=context)


def _context(credential, server) -> str:
    return context_of(
        server=server,
        user_id=credential.user_id,
        purpose=credential.purpose,
        mode=credential.mode,
        origin=credential.origin,
    )
