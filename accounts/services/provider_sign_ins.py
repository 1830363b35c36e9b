"""A user's identity-provider login, kept for cross-app access (accounts/models.ProviderSignIn): sealed
to the user and the provider, replaced by each login and read only by the exchange
(connections/cross_app.py)."""

from __future__ import annotations

import json

from django.utils import timezone

from accounts.models import ProviderSignIn, User
from core import sealing


def _context(user_id: int, provider: str, issuer: str) -> str:
    return f"provider-sign-in|user={user_id}|{provider}|{issuer}"


def provider_sign_in_keep(
    *, user: User, provider: str, issuer: str, id_token: str, refresh_token: str, id_token_expires_at
) -> ProviderSignIn | None:
    """Keep what a login obtained (nothing when it obtained neither token)."""
    if not id_token and not refresh_token:
        return None
    values = {"id_token": id_token, "refresh_token": refresh_token}
    sealed = sealing.seal(json.dumps(values).encode(), context=_context(user.pk, provider, issuer))
    kept, _ = ProviderSignIn.objects.update_or_create(
        user=user,
        provider=provider,
        defaults={
            "issuer": issuer,
            "sealed": sealed,
            "id_token_expires_at": id_token_expires_at,
            "signed_in_at": timezone.now(),
        },
    )
    return kept


def provider_sign_in_opened(sign_in: ProviderSignIn) -> dict:
    """The kept tokens: {"id_token", "refresh_token"} (Unsealable when they no longer open)."""
    return json.loads(
        sealing.unseal(sign_in.sealed, context=_context(sign_in.user_id, sign_in.provider, sign_in.issuer))
    )


def provider_sign_in_refreshed(*, sign_in: ProviderSignIn, refresh_token: str) -> None:
    """The identity provider rotated the refresh token while exchanging it: keep the new one."""
    values = provider_sign_in_opened(sign_in) | {"refresh_token": refresh_token}
    context = _context(sign_in.user_id, sign_in.provider, sign_in.issuer)
    sign_in.sealed = sealing.seal(json.dumps(values).encode(), context=context)
    sign_in.save(update_fields=["sealed"])
