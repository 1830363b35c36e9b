from django.apps import AppConfig


class LimitsConfig(AppConfig):
    """Limits per caller, per target and per caller × target, and quarantine: how much anyone may call
    anything through the gateway, and who or what is stopped at once (docs/limits.md)."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "limits"
    label = "limits"

    def ready(self):
        from core.targets import TARGETS
        from limits.selectors import restrictions_of

        TARGETS.restrictions = restrictions_of
