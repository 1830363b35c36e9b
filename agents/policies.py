"""Who sees and may change which agent: the agents app's one set of decisions, asked by the services'
callers on every surface (the agent API, the agents page, search/), so each answers a caller the same way.

- An agent is seen as `Agent.objects.visible_to` says: public ones by everyone, private ones by their
  owner, internal ones by the members of its groups, every one by admins. An unseen agent is answered
  with 404, never 403.
- Each action on a seen agent needs its permission below (403 otherwise).
"""

from accounts.choices import UiPermission
from accounts.principal import Principal
from agents.a2a import MESSAGE_METHODS
from agents.choices import Visibility
from agents.models import Agent
from agents.selectors import AgentRoute
from servers.choices import USER_CREDENTIAL_MODES


def agent_visible(principal, path: str) -> Agent | None:
    """The agent at `path` if `principal` may see it; None both when it is missing and when it is hidden,
    so callers answer 404 alike and existence does not leak."""
    return (
        Agent.objects.visible_to(principal)
        .select_related("owner")
        .defer("embedding")
        .filter(path=path)
        .first()
    )


def _owns(principal: Principal, agent: Agent) -> bool:
    return principal.user is not None and agent.owner_id == principal.user.pk


def agent_may_publish(principal: Principal, path: str | None = None) -> bool:
    """`publish_agent` for `path` (or, without a path, for any path at all)."""
    return principal.can(UiPermission.PUBLISH_AGENT, path)


# Servers and agents share the path syntax but not the permission namespace: a `*_service` grant on a
# path names a server, so it never reaches the agent at the same path. The interface's `modify_service` and
# `toggle_service` reach agents only when granted on `all`; per-path grants for agents are `*_agent`.


def agent_may_modify(principal: Principal, agent: Agent) -> bool:
    """`modify_agent` on the agent's path (or `modify_service` on all) and ownership, or admin."""
    if principal.is_admin:
        return True
    granted = principal.can(UiPermission.MODIFY_AGENT, agent.path) or principal.can_everywhere(
        UiPermission.MODIFY_SERVICE
    )
    return granted and _owns(principal, agent)


def agent_may_delete(principal: Principal, agent: Agent) -> bool:
    """Owners delete their own agents; `delete_agent` (or admin) deletes anyone's."""
    return _owns(principal, agent) or principal.can(UiPermission.DELETE_AGENT, agent.path)


def agent_may_toggle(principal: Principal, agent: Agent) -> bool:
    """`toggle_agent` on the agent's path, or `toggle_service` on all, or admin."""
    return principal.can(UiPermission.TOGGLE_AGENT, agent.path) or principal.can_everywhere(
        UiPermission.TOGGLE_SERVICE
    )


def agent_usable(principal: Principal, path: str) -> Agent | None:
    """The agent at `path` if `principal` sees it and a rule lets them message it, else None."""
    agent = agent_visible(principal, path)
    return agent if agent is not None and _may_message(principal, agent) else None


def agents_usable(principal: Principal, agents) -> set[int]:
    """The ids of `agents` that `principal` sees and may message (agent_usable for many, in one query)."""
    seen = Agent.objects.visible_to(principal).filter(pk__in=[agent.pk for agent in agents])
    return {agent.pk for agent in seen.defer("embedding") if _may_message(principal, agent)}


def agents_needing_credential(principal: Principal) -> list[Agent]:
    """The agents `principal` may message that need each user's own credential (the Connections page)."""
    agents = (
        Agent.objects.visible_to(principal)
        .filter(upstream_auth__in=list(USER_CREDENTIAL_MODES))
        .defer("embedding")
        .order_by("path")
    )
    return [agent for agent in agents if _may_message(principal, agent)]


def _may_message(principal: Principal, agent: Agent) -> bool:
    return any(principal.allows_mcp(agent.path, method) for method in MESSAGE_METHODS)


def agent_seen_by(principal: Principal, route: AgentRoute) -> bool:
    """AgentQuerySet.visible_to decided in memory for one agent the route cache holds (the same rule:
    all to administrators; public and enabled to anonymous callers; public, one's own, and internal ones
    shared through one of one's groups to everyone else)."""
    agent = route.agent
    if principal.is_admin:
        return True
    if not principal.is_authenticated:
        return agent.visibility == Visibility.PUBLIC and agent.is_enabled
    if agent.visibility == Visibility.PUBLIC or _owns(principal, agent):
        return True
    return agent.visibility == Visibility.INTERNAL and bool(route.sharing & set(principal.groups or ()))


def agent_reached(principal: Principal, routes) -> Agent | None:
    """The enabled agent a gateway path names (the longest of its `routes`) that `principal` may see;
    None both when there is none and when it is hidden (answered alike, so existence does not leak)."""
    return next((r.agent for r in routes if r.agent.is_enabled and agent_seen_by(principal, r)), None)
