from django.apps import AppConfig


class CatalogConfig(AppConfig):
    """server.json entries published here or mirrored from upstream registries: their versions, their
    lifecycle, who may publish them, and the mirroring of other registries."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "catalog"
    label = "catalog"
