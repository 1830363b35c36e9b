"""The health websockets (servers/consumers.py) with the agents on them: each socket also sends the
entries of the agents its caller may see (agents/live.py), the public one those of enabled public
agents. An agent that leaves a socket's view (deleted, disabled, made private, its access withdrawn)
comes as `{key: null}`, and only to a socket that was shown it, so no socket learns of agents it may not
see."""

from channels.db import database_sync_to_async

from agents.choices import Visibility
from agents.models import Agent
from agents.selectors import agents_health_snapshot
from servers import consumers
from servers.live.entries import public_entry


class _WithAgents:
    agents_shown: set[str]

    def snapshot(self) -> dict:
        agents = agents_health_snapshot(self.snapshot_principal())
        self.agents_shown = set(agents)
        return {**super().snapshot(), **agents}

    async def health_changed(self, event: dict) -> None:
        if "agent" not in event:
            return await super().health_changed(event)
        key = event["path"]
        if event["entry"] is not None and self.sees_agent(event):
            self.agents_shown.add(key)
            await self.send_json({key: self.agent_entry(event["entry"])})
        elif key in self.agents_shown:
            self.agents_shown.discard(key)
            await self.send_json({key: None})


class PublicHealthStatusConsumer(_WithAgents, consumers.PublicHealthStatusConsumer):
    """Enabled servers and enabled public agents, for anyone."""

    def sees_agent(self, event: dict) -> bool:
        return event["public"]

    def agent_entry(self, entry: dict) -> dict:
        return public_entry(entry)


class HealthStatusConsumer(_WithAgents, consumers.HealthStatusConsumer):
    """The servers and agents a logged-in session may see (disabled ones too, for those who see them)."""

    agent_paths: frozenset[str] = frozenset()

    async def authorize(self) -> bool:
        if not await super().authorize():
            return False
        self.agent_paths = await database_sync_to_async(self._agent_paths)()
        return True

    def _agent_paths(self) -> frozenset[str]:
        return frozenset(Agent.objects.visible_to(self.principal).values_list("path", flat=True))

    def sees_agent(self, event: dict) -> bool:
        public = event["visibility"] == Visibility.PUBLIC
        return self.principal.is_admin or public or event["agent"] in self.agent_paths

    def agent_entry(self, entry: dict) -> dict:
        return entry
