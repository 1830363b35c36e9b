"""Routes of the health API (section F of the interface); the websockets are in `servers/routing.py`."""

from django.urls import path

from servers.api import health

urlpatterns = [
    path("api/health/ws/health_status", health.HealthSnapshotView.as_view(), name="health-snapshot"),
    path("api/health/ws/stats", health.WebsocketStatsView.as_view(), name="health-ws-stats"),
]
