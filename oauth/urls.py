"""The authorization server's URLs. They live in django-oauth-toolkit's namespace, which its metadata
view reverses to name the endpoints; the metadata documents are at the root, as RFC 8414 and RFC 9728
place them."""

from django.urls import path, re_path
from oauth2_provider import views as toolkit

from oauth import views

app_name = "oauth2_provider"

urlpatterns = [
    path(
        ".well-known/oauth-authorization-server",
        views.ServerMetadataView.as_view(),
        name="oauth-server-metadata",
    ),
    re_path(
        r"^\.well-known/oauth-protected-resource(?:/.*)?$",
        views.ResourceMetadataView.as_view(),
        name="oauth-resource-metadata",
    ),
    path("oauth/authorize", views.ConsentView.as_view(), name="authorize"),
    path("oauth/token", toolkit.TokenView.as_view(), name="token"),
    path("oauth/revoke", toolkit.RevokeTokenView.as_view(), name="revoke-token"),
    path("oauth/register", views.RegistrationView.as_view(), name="dcr-register"),
    path(  # RFC 7592: a registered client reads, updates or deletes its registration with its own token
        "oauth/register/<str:client_id>",
        views.RegistrationManagementView.as_view(),
        name="dcr-register-management",
    ),
    # The default endpoints of the 2025-03-26 revision, which hosts fall back to when they hold no
    # metadata (the Python SDK refreshing after a restart): the same views. (`/register` is the
    # dashboard's page; such hosts register with the metadata's registration_endpoint.)
    path("authorize", views.ConsentView.as_view()),
    path("token", toolkit.TokenView.as_view()),
    path("oauth/applications/<int:pk>/revoke", views.consent_withdraw_form, name="consent-withdraw"),
    # The page where a user takes credentials for an MCP host: a token, or an application they authorized.
    path("api/tokens", views.tokens, name="tokens-page"),
    path("api/tokens/<str:jti>/revoke", views.token_revoke_form, name="tokens-page-revoke"),
]
