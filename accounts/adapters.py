"""django-allauth hooks: no self sign-up, identity-provider groups follow the login, and login errors
land on the registry's own login page."""

from urllib.parse import urlencode

from allauth.account.adapter import DefaultAccountAdapter
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from django.conf import settings
from django.shortcuts import redirect

from accounts.services import user_sync_idp_groups


def idp_groups(extra_data: dict) -> list[str]:
    """The groups claim from an OpenID login's userinfo or ID token (OIDC_GROUPS_CLAIM)."""
    claim = settings.OIDC_GROUPS_CLAIM
    for source in (extra_data.get("userinfo") or {}, extra_data.get("id_token") or {}, extra_data):
        value = source.get(claim) if isinstance(source, dict) else None
        if value:
            return [value] if isinstance(value, str) else [str(v) for v in value]
    return []


class AccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request):
        return False  # local accounts are created by operators, not by visitors


class SocialAccountAdapter(DefaultSocialAccountAdapter):
    def is_open_for_signup(self, request, sociallogin):
        return True  # an identity-provider login creates its user (a username of its own, never a local one)

    def pre_social_login(self, request, sociallogin):
        if sociallogin.is_existing:
            self._sync_groups(sociallogin.user, sociallogin)

    def save_user(self, request, sociallogin, form=None):
        user = super().save_user(request, sociallogin, form)
        self._sync_groups(user, sociallogin)
        return user

    def on_authentication_error(self, request, provider, error=None, exception=None, extra_context=None):
        message = "Login with the identity provider failed."
        raise ImmediateHttpResponse(redirect(f"/api/auth/auth/callback?{urlencode({'error': message})}"))

    @staticmethod
    def _sync_groups(user, sociallogin) -> None:
        user_sync_idp_groups(
            user=user,
            idp_groups=idp_groups(sociallogin.account.extra_data),
            provider=sociallogin.account.provider,
        )
