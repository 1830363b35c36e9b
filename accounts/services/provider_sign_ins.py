"""A user's identity-provider login, kept for cross-app access (accounts/models.ProviderSignIn): sealed
to the user and the provider, replaced by each login; opened only by the exchange
(connections/cross_app.py)."""

from __future__ import annotations

import json

from django.utils import timezone

from accounts.models import ProviderSignIn, User
from core import sealing


def provider_sign_in_keep(
    *, user: User, provider: str, issuer: str, id_token: str, refresh_token: str, id_token_expires_at
) -> ProviderSignIn | None:
    """Keep what a login obtained (nothing when it obtained neither token)."""
    if not id_token and not refresh_token:
        return None
    values = {"id_token": id_token, "refresh_token": refresh_token}
    context = ProviderSignIn.sealing_context(user.pk, provider, issuer)
    sealed = sealing.seal(json.dumps(values).encode(), context=context)
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
