from django.apps import AppConfig


class AgentsConfig(AppConfig):
    """A2A agent cards and their discovery."""

    name = "agents"

    def ready(self):
        from agents import cache, policies, selectors
        from agents.models import Agent
        from core.targets import TARGETS, TargetKind, UpstreamKind

        cache.connect()
        TARGETS.exists[TargetKind.AGENT] = selectors.agent_exists
        TARGETS.upstreams[TargetKind.AGENT] = UpstreamKind(
            model=Agent,
            usable=policies.agents_needing_credential,
            visible=policies.agent_usable,
            page=lambda agent: "/agents",
        )
