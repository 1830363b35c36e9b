"""Websocket routes of the servers app."""

from django.urls import path

from core.websockets import BrowserOriginValidator
from servers.consumers import HealthStatusConsumer, PublicHealthStatusConsumer

websocket_urlpatterns = [
    path("api/health/ws/health_status", BrowserOriginValidator(HealthStatusConsumer.as_asgi())),
    path("ws/health_status", PublicHealthStatusConsumer.as_asgi()),
]
