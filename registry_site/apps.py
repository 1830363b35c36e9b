from django.apps import AppConfig


class RegistrySiteConfig(AppConfig):
    """The project's wiring as an app: its management command (`serve`) and templates."""

    name = "registry_site"
    verbose_name = "Registry"
