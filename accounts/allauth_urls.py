"""What the registry mounts of django-allauth, under /accounts/: the identity providers' login and
callback URLs and nothing else. No sign-up, no password reset, no e-mail pages: local accounts are made
by operators. The few URL names allauth reverses on its own lead to the registry's login page."""

from urllib.parse import urlencode

from allauth.urls import build_provider_urlpatterns
from django.urls import path
from django.views.generic.base import RedirectView

from accounts.adapters import oidc_callback


def _to_login(error: str = "") -> RedirectView:
    return RedirectView.as_view(url="/login" + (f"?{urlencode({'error': error})}" if error else ""))


urlpatterns = [
    # before allauth's own, which it replaces: the same callback, keeping the raw ID token
    path("oidc/<str:provider_id>/login/callback/", oidc_callback, name="openid_connect_callback"),
    *build_provider_urlpatterns(),
    path("login/", _to_login(), name="account_login"),
    path("inactive/", _to_login("This account is inactive."), name="account_inactive"),
    path(
        "3rdparty/signup/",
        _to_login("This identity-provider account cannot be signed up here; ask an operator."),
        name="socialaccount_signup",
    ),
    path(
        "3rdparty/login/cancelled/", _to_login("Login was cancelled."), name="socialaccount_login_cancelled"
    ),
    path(
        "3rdparty/login/error/",
        _to_login("Login with the identity provider failed."),
        name="socialaccount_login_error",
    ),
]
