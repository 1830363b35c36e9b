"""The health websockets' routes, served by the consumers that carry agents too (agents/consumers.py)."""

from django.urls import path

from agents.consumers import HealthStatusConsumer, PublicHealthStatusConsumer
from core.websockets import BrowserOriginValidator

websocket_urlpatterns = [
    path("api/health/ws/health_status", BrowserOriginValidator(HealthStatusConsumer.as_asgi())),
    path("ws/health_status", PublicHealthStatusConsumer.as_asgi()),
]
