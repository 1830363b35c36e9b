"""Root URLs: each app owns its pages (`urls.py`) and its JSON API (`api/urls.py`)."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from registry_site import views

handler404 = "registry_site.views.not_found"
handler400 = "registry_site.views.bad_request"
handler403 = "registry_site.views.permission_denied"
handler500 = "registry_site.views.server_error"

urlpatterns = [
    path("health", views.health, name="health"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("admin/", admin.site.urls),
    path("accounts/", include("accounts.allauth_urls")),  # identity-provider login and callback only
    path("", include("accounts.urls")),
    path("", include("oauth.urls")),
    path("", include("accounts.api.urls")),
    path("", include("gateway.api.urls")),
    path("", include("servers.api.urls")),
    path("", include("servers.urls")),
    path("", include("catalog.api.urls")),
    path("", include("catalog.urls")),
    # Search routes first: `api/agents/discover/...` must win over `api/agents/<path>`.
    path("", include("agents.api.search_urls")),
    path("", include("agents.api.urls")),
    path("", include("agents.urls")),
]
