from django.apps import AppConfig


class MetricsConfig(AppConfig):
    """The metrics collection service (its own ASGI entry and port)."""

    name = "metrics"

    def ready(self):
        from metrics import cache

        cache.connect()
