from django.apps import AppConfig


class RegistrySiteConfig(AppConfig):
    """Project-level pieces that need an app: management commands, the error catalogue."""

    name = "registry_site"
    verbose_name = "Registry"
