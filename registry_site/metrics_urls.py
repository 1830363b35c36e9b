"""Root URLs of the metrics service's port: its API and a load-balancer health check, nothing of the
registry."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from registry_site import views

handler404 = "registry_site.views.not_found"
handler400 = "registry_site.views.bad_request"
handler500 = "registry_site.views.server_error"

urlpatterns = [
    path("health", views.health, name="health"),
    path("api/schema/", SpectacularAPIView.as_view(urlconf="registry_site.metrics_urls"), name="schema"),
    path("", include("metrics.api.urls")),
]
