from django.apps import AppConfig


class AgentsConfig(AppConfig):
    """A2A agent cards and their discovery."""

    name = "agents"
