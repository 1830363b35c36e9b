"""The internal administration API's group grants, for every target a group can be given: a server or a
virtual server (a rule in the group's own scope: `groups_server_grant`) and an agent (the agent's groups:
`agent_groups_grant`). They live here, with the highest of those apps. A name is looked up in that
order: a server first, as before virtual servers and agents could be given."""

from rest_framework.response import Response

from accounts.authentication import principal_of
from accounts.services import GroupRefused, groups_server_grant, groups_server_revoke
from agents.models import Agent
from agents.services import agent_groups_grant, agent_groups_revoke
from core.errors import ApiError, ErrorCode
from core.openapi import documented
from servers.api import internal
from servers.models import Server
from virtual_servers.models import VirtualServer


def _held_at(path: str) -> tuple[str, Agent | None]:
    """What is registered at `path`: ("server", None), ("virtual server", None) or ("agent", the agent);
    404 when nothing is."""
    if Server.objects.filter(path=path).exists():
        return "server", None
    if VirtualServer.objects.filter(path=path).exists():
        return "virtual server", None
    if (agent := Agent.objects.filter(path=path).first()) is not None:
        return "agent", agent
    raise ApiError(404, ErrorCode.NOT_FOUND, f"No server, virtual server or agent is registered at {path}.")


class InternalAddToGroupsView(internal.InternalView):
    """POST /api/internal/add-to-groups: each group may use the server or virtual server at `server_name`
    (all methods and tools), or see and use the internal agent there."""

    @documented(request=internal.GroupServerSerializer, errors=internal.INTERNAL_ERRORS + (409,))
    def post(self, request):
        data = internal.valid(internal.GroupServerSerializer, request.data)
        path, names, actor = data["server_name"], data["group_names"], principal_of(request)
        kind, agent = _held_at(path)
        try:
            if agent is not None:
                changed = agent_groups_grant(actor=actor, agent=agent, group_names=names)
            else:
                changed = groups_server_grant(actor=actor, group_names=names, server_path=path)
        except GroupRefused as exc:
            raise internal.refused(exc) from None
        return Response(
            {
                "message": f"{kind.capitalize()} {path} added to groups: {', '.join(names)}.",
                f"{kind.replace(' ', '_')}_path": path,
                "groups": names,
                "changed": changed,
            }
        )


class InternalRemoveFromGroupsView(internal.InternalView):
    """POST /api/internal/remove-from-groups: the same target taken from each group (for a server or a
    virtual server, `still_granted_by` names the other scopes that still grant it)."""

    @documented(request=internal.GroupServerSerializer, errors=internal.INTERNAL_ERRORS)
    def post(self, request):
        data = internal.valid(internal.GroupServerSerializer, request.data)
        path, names, actor = data["server_name"], data["group_names"], principal_of(request)
        kind, agent = _held_at(path)
        still = None
        try:
            if agent is not None:
                changed = agent_groups_revoke(actor=actor, agent=agent, group_names=names)
            else:
                changed, still = groups_server_revoke(actor=actor, group_names=names, server_path=path)
        except GroupRefused as exc:
            raise internal.refused(exc) from None
        answer = {
            "message": f"{kind.capitalize()} {path} removed from groups: {', '.join(names)}.",
            f"{kind.replace(' ', '_')}_path": path,
            "groups": names,
            "changed": changed,
        }
        return Response(answer if still is None else {**answer, "still_granted_by": still})
