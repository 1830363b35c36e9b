from django.apps import AppConfig


class GatewayConfig(AppConfig):
    """Everything that judges and carries MCP traffic: the built-in gateway, `/validate` and nginx."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "gateway"
