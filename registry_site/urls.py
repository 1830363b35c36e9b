"""Root URLs: each app owns its pages (`urls.py`) and its JSON API (`api/urls.py`), mounted once here."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from registry_site import views

handler404 = "registry_site.views.not_found"
handler400 = "registry_site.views.bad_request"
handler403 = "registry_site.views.permission_denied"
handler500 = "registry_site.views.server_error"


def app_urls(app: str) -> list:
    """An app's pages (`<app>/urls.py`) and JSON API (`<app>/api/urls.py`), each mounted once, at the root
    (the interface fixes every path, so no app has a prefix of its own)."""
    return [path("", include(f"{app}.api.urls")), path("", include(f"{app}.urls"))]


urlpatterns = [
    path("health", views.health, name="health"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("admin/", admin.site.urls),
    path("accounts/", include("accounts.allauth_urls")),  # identity-provider login and callback only
    *app_urls("accounts"),
    path("", include("oauth.api.urls")),  # the identity providers whose assertions it accepts
    path("", include("oauth.urls")),  # the authorization server: pages and endpoints in one namespace
    path("", include("gateway.api.urls")),  # the gateway itself is ASGI (registry_site/asgi.py)
    *app_urls("servers"),
    path("", include("connections.urls")),  # each user's credentials to upstream servers
    *app_urls("virtual_servers"),  # virtual servers (the gateway serves their URLs)
    *app_urls("skills"),  # Agent Skills: published, scanned, pinned, and their well-known discovery
    path("", include("limits.api.urls")),  # limits and quarantines of the gateway's traffic
    *app_urls("catalog"),
    *app_urls("search"),  # before agents: `api/agents/discover/semantic` is search's
    *app_urls("agents"),
    path("", include("discovery.urls")),  # the AI Catalog over servers, virtual servers and agents
]
