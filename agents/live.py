"""Agents on the health websocket (servers/consumers.py, agents/consumers.py): each agent's entry is keyed
by its gateway path, `<agent path>/a2a` (where callers reach it, and never a server's path), and says
`"kind": "agent"`; it counts no tools (`num_tools` 0) and gives the agent's skills as `num_skills`.
Published through the servers' one channel-layer group, with what the sockets need to judge who sees it."""

from agents.choices import Visibility
from agents.models import Agent
from servers.live.entries import health_entry
from servers.live.publish import entry_changed

KIND = "agent"


def agent_key(path: str) -> str:
    return f"{path}/a2a"


def agent_entry(agent: Agent) -> dict:
    entry = health_entry(agent.health_status, agent.last_checked_at, 0, agent.health_detail, agent.is_enabled)
    return {**entry, "kind": KIND, "num_skills": agent.num_skills}


def agent_health_changed(agent: Agent) -> None:
    """Publish `agent`'s entry once the surrounding transaction commits. `public` says whether the public
    socket shows it (an enabled public agent, as `/api/agents` shows anonymous callers); `visibility`
    lets a session's socket show a public agent that was disabled to those who see it."""
    public = agent.is_enabled and agent.visibility == Visibility.PUBLIC
    entry_changed(
        agent_key(agent.path),
        enabled=agent.is_enabled,
        entry=agent_entry(agent),
        agent=agent.path,
        public=public,
        visibility=agent.visibility,
    )


def agent_health_removed(path: str) -> None:
    entry_changed(agent_key(path), enabled=False, entry=None, agent=path, public=False, visibility="")
