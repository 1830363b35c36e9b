"""django-allauth hooks: no self sign-up, identity-provider groups follow the login, login errors land on
the registry's own login page, and, with CROSS_APP_ACCESS_ENABLED, an OpenID Connect login's ID token and
refresh token are kept sealed for cross-app access (the callback below keeps the raw ID token, which
allauth decodes and drops)."""

from datetime import UTC, datetime
from urllib.parse import urlencode

from allauth.account.adapter import DefaultAccountAdapter
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from allauth.socialaccount.models import SocialApp
from allauth.socialaccount.providers.oauth2.views import OAuth2CallbackView
from allauth.socialaccount.providers.openid_connect.views import OpenIDConnectOAuth2Adapter
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import Http404
from django.shortcuts import redirect

from accounts.selectors import oidc_issuer_of
from accounts.services import provider_sign_in_keep, user_sync_idp_groups


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
            self._keep_sign_in(sociallogin.user, sociallogin)

    def save_user(self, request, sociallogin, form=None):
        user = super().save_user(request, sociallogin, form)
        self._sync_groups(user, sociallogin)
        self._keep_sign_in(user, sociallogin)
        return user

    def on_authentication_error(self, request, provider, error=None, exception=None, extra_context=None):
        message = "Login with the identity provider failed."
        raise ImmediateHttpResponse(redirect(f"/api/auth/auth/callback?{urlencode({'error': message})}"))

    @staticmethod
    def _keep_sign_in(user, sociallogin) -> None:
        provider = sociallogin.account.provider
        issuer = oidc_issuer_of(provider)
        if not settings.CROSS_APP_ACCESS_ENABLED or issuer is None or sociallogin.token is None:
            return
        claims = sociallogin.account.extra_data.get("id_token") or {}
        expires = claims.get("exp") if isinstance(claims, dict) else None
        provider_sign_in_keep(
            user=user,
            provider=provider,
            issuer=issuer,
            id_token=getattr(sociallogin.token, "id_token", "") or "",
            refresh_token=sociallogin.token.token_secret or "",
            id_token_expires_at=datetime.fromtimestamp(expires, UTC) if isinstance(expires, int) else None,
        )

    @staticmethod
    def _sync_groups(user, sociallogin) -> None:
        user_sync_idp_groups(
            user=user,
            idp_groups=idp_groups(sociallogin.account.extra_data),
            provider=sociallogin.account.provider,
        )


class KeepingIdTokenAdapter(OpenIDConnectOAuth2Adapter):
    """allauth's OpenID Connect adapter, keeping the raw ID token of the token response on the token it
    makes (allauth keeps only its decoded claims), for `_keep_sign_in` above."""

    def parse_token(self, data):
        token = super().parse_token(data)
        token.id_token = data.get("id_token", "") if isinstance(data.get("id_token"), str) else ""
        return token


@login_not_required
def oidc_callback(request, provider_id):
    """allauth's OpenID Connect callback, with the adapter above (mounted at its URL and name)."""
    try:
        return OAuth2CallbackView.adapter_view(KeepingIdTokenAdapter(request, provider_id))(request)
    except SocialApp.DoesNotExist:
        raise Http404 from None
