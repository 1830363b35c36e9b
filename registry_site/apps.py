from django.apps import AppConfig


class RegistrySiteConfig(AppConfig):
    """Project-level pieces that need an app: management commands, the error catalogue."""

    name = "registry_site"
    verbose_name = "Registry"

    def ready(self):
        from registry_site import openapi  # noqa: F401 (registers the OpenAPI security schemes)
