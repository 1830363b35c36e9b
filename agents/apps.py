from django.apps import AppConfig


class AgentsConfig(AppConfig):
    """A2A agent cards and their discovery."""

    name = "agents"

    def ready(self):
        from agents import selectors
        from core.targets import TARGETS, TargetKind

        TARGETS.exists[TargetKind.AGENT] = selectors.agent_exists
