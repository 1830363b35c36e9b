"""What a stored credential is bound to: its associated data (core/sealing.py) names the user, the target (a
server or an agent, by kind and key), the purpose, and the target's mode and origin when it was connected.
Opening it under the target as it is now fails when any of them changed, so a credential never reaches an
address it was not given for."""

import json

from core import sealing
from core.public_url import origin_of


def context_of(*, target, user_id, purpose: str, mode: str, origin: str) -> str:
    owner = f"{target.TARGET_KIND}={target.pk}|user={user_id or '-'}"
    return f"upstream-credential|{owner}|{purpose}|{mode}|{origin}"


def seal_for(*, target, user_id, purpose: str, values: dict) -> tuple[str, str, str]:
    """(sealed, mode, origin) of `values` for this target as it is now."""
    origin = origin_of(target.upstream_url)
    context = context_of(
        target=target, user_id=user_id, purpose=purpose, mode=target.upstream_auth, origin=origin
    )
    return sealing.seal(json.dumps(values).encode(), context=context), target.upstream_auth, origin


def fits(credential, target) -> bool:
    """Whether `credential` was connected for `target` as it is now (same mode, same origin)."""
    return credential.mode == target.upstream_auth and credential.origin == origin_of(target.upstream_url)


def open_for(credential, target) -> dict:
    """The values of `credential` if it still belongs to `target` as it is now; Unsealable otherwise."""
    if not fits(credential, target):
        raise sealing.Unsealable("the target's mode or origin changed since it was connected")
    return json.loads(sealing.unseal(credential.sealed, context=_context(credential, target)))


def open_as_connected(credential) -> dict:
    """The values of `credential` under what it was connected for, whatever the target is now: only to
    revoke it where it came from (connections/services.py)."""
    return json.loads(sealing.unseal(credential.sealed, context=_context(credential, credential.target)))


def resealed(credential, target) -> str:
    """`credential` sealed again under the newest key (Unsealable when it no longer opens)."""
    context = _context(credential, target)
    return sealing.seal(sealing.unseal(credential.sealed, context=context), context=context)


def _context(credential, target) -> str:
    return context_of(
        target=target,
        user_id=credential.user_id,
        purpose=credential.purpose,
        mode=credential.mode,
        origin=credential.origin,
    )
