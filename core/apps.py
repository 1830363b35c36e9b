from django.apps import AppConfig


class CoreConfig(AppConfig):
    """The shared library as an app: the console's template tags, the OpenAPI security schemes."""

    name = "core"
    verbose_name = "Core"

    def ready(self):
        from core import openapi  # noqa: F401 (registers the OpenAPI security schemes)
