"""Reads of virtual servers: the gateway's route (members and the tools their servers are known to
offer, cached per process), what holds a path, and the console's and API's views of a definition."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property

from django.db.models import Prefetch

from core.epochs import MISSING
from servers.choices import HealthStatus
from servers.models import Server, Tool
from servers.naming import server_name
from servers.selectors import GATEWAY_FIELDS
from skills import over_mcp
from skills.selectors import served_over_mcp
from virtual_servers.cache import VIRTUALS
from virtual_servers.mapping import Member, tool_index
from virtual_servers.models import VirtualAgent, VirtualMember, VirtualServer
from virtual_servers.rules import carried, exposed_name


@dataclass(frozen=True)
class VirtualTarget:
    """A virtual server as the gateway routes it."""

    pk: int
    path: str
    name: str
    description: str
    is_enabled: bool
    members: tuple[Member, ...]
    known: dict  # member key → names of the tools its server is known to offer
    skill_ids: tuple[int, ...] = ()  # the skills it serves (gateway/virtual/skills.py)
    tool_search: bool = False  # lists search_tools and call_tool instead (gateway/virtual/search.py)
    agents: tuple = ()  # (key, agent) of the A2A agents it carries as tools (gateway/virtual/agent_tools.py)
    a2a: bool = False  # also an A2A agent at /<path>/a2a (gateway/virtual/a2a.py)

    @cached_property
    def tools_by_name(self) -> dict:
        """Name clients see → (member, the tool's own name), for a call the session's lists did not show
        (worked out once per process and definition: a call looks its tool up, never walks the members)."""
        return tool_index(self.members, self.known)


def virtual_for_gateway(candidates: tuple[str, ...], epoch=MISSING) -> VirtualTarget | None:
    """The virtual server a gateway path names (the longest of `candidates`), or None."""
    if epoch is MISSING:
        epoch = VIRTUALS.epoch()
    cached = VIRTUALS.get(candidates, epoch)
    if cached is not MISSING:
        return cached
    found = {v.path: v for v in VirtualServer.objects.filter(path__in=candidates)}
    virtual = next((found[c] for c in candidates if c in found), None)
    target = None if virtual is None else _target(virtual)
    VIRTUALS.put(candidates, target, epoch)
    return target


def virtual_for_gateway_cached(candidates: tuple[str, ...], epoch):
    return VIRTUALS.get(candidates, epoch)


def _target(virtual: VirtualServer) -> VirtualTarget:
    rows = list(
        VirtualMember.objects.filter(virtual=virtual)
        .select_related("server")
        .only(
            "key",
            "position",
            "tools",
            "prompts",
            "resources",
            "tool_settings",
            "virtual_id",
            *(f"server__{field}" for field in GATEWAY_FIELDS),
        )
    )
    members = tuple(  # a disabled server is left out until it is enabled again
        Member(row.key, row.server, row.tools, row.prompts, row.resources, row.tool_settings)
        for row in rows
        if row.server.is_enabled
    )
    known = defaultdict(set)
    by_server = {row.server_id: row.key for row in rows}
    for server_id, name in Tool.objects.filter(server_id__in=list(by_server)).values_list(
        "server_id", "name"
    ):
        known[by_server[server_id]].add(name)
    return VirtualTarget(
        virtual.pk,
        virtual.path,
        virtual.name,
        virtual.description,
        virtual.is_enabled,
        members,
        dict(known),
        tuple(virtual.skills.values_list("pk", flat=True)),
        virtual.tool_search,
        tuple(
            (row.key, row.agent)
            for row in virtual.agent_members.select_related("agent").order_by("position")
            if row.agent.is_enabled
        ),
        virtual.a2a,
    )


def tools_seen(virtual: VirtualServer) -> list[tuple[str, str, str]]:
    """The tools clients see under a virtual server, by name: (name, its member's server path, the tool's
    own name), from its enabled members' known tools through its definition."""
    target = _target(virtual)
    return [(name, member.server.path, own) for name, (member, own) in sorted(target.tools_by_name.items())]


def virtual_exists(path: str) -> bool:
    return VirtualServer.objects.filter(path=path).exists()


def path_holder(path: str) -> str | None:
    """What holds `path` among virtual servers (for the servers' path rule), or None."""
    return f"the virtual server {path}" if VirtualServer.objects.filter(path=path).exists() else None


def health_of(virtual: VirtualServer, members_of=None) -> dict:
    """A virtual server's health, derived from its members' last checks: `healthy` when every enabled
    member is, `unhealthy` when none is, `degraded` between, `disabled` when it or every member is off;
    with each member's own state. `members_of`: its members when already read."""
    rows = members_of if members_of is not None else virtual.members.select_related("server")
    members = {m.server.path: m.server.health_status for m in rows}
    enabled = [status for status in members.values() if status != HealthStatus.DISABLED]
    if not virtual.is_enabled or not enabled:
        status = HealthStatus.DISABLED.value
    elif all(state == HealthStatus.HEALTHY for state in enabled):
        status = HealthStatus.HEALTHY.value
    elif any(state == HealthStatus.HEALTHY for state in enabled):
        status = "degraded"
    elif all(state == HealthStatus.UNKNOWN for state in enabled):
        status = HealthStatus.UNKNOWN.value
    else:
        status = HealthStatus.UNHEALTHY.value
    return {"status": status, "members": members}


def discovery_entries(base: str) -> list[dict]:
    """Enabled virtual servers as entries of the public discovery document (servers/api/discovery.py)."""
    entries = []
    members = Prefetch(
        "members", queryset=VirtualMember.objects.select_related("server").order_by("position")
    )
    for virtual in VirtualServer.objects.filter(is_enabled=True).order_by("path").prefetch_related(members):
        rows = list(virtual.members.all())
        entries.append(
            {
                "id": server_name(virtual.path),
                "name": virtual.name,
                "description": virtual.description,
                "path": virtual.path,
                "mcp": {"type": "streamable-http", "url": f"{base}{virtual.path}/mcp"},
                "authentication": {
                    "required": True,
                    "type": "bearer",
                    "token_endpoint": f"{base}/api/auth/token",
                },
                "health_status": health_of(virtual, rows)["status"],
                "virtual": True,
                "members": [member.server.path for member in rows],
            }
        )
    return entries


def _members(virtual: VirtualServer) -> list[VirtualMember]:
    """Its members by position, servers joined: the prefetched ones when `shown_definitions` read them."""
    if "members" in getattr(virtual, "_prefetched_objects_cache", {}):
        return list(virtual.members.all())
    return list(virtual.members.select_related("server").order_by("position"))


def _agent_members(virtual: VirtualServer) -> list[VirtualAgent]:
    """Its agents by position, agents joined: the prefetched ones when `shown_definitions` read them."""
    if "agent_members" in getattr(virtual, "_prefetched_objects_cache", {}):
        return list(virtual.agent_members.all())
    return list(virtual.agent_members.select_related("agent").order_by("position"))


def definition_of(virtual: VirtualServer) -> dict:
    """A virtual server as the API and the console show it (the shape its definition is written in)."""
    members = _members(virtual)
    return {
        "path": virtual.path,
        "name": virtual.name,
        "description": virtual.description,
        "is_enabled": virtual.is_enabled,
        "tool_search": virtual.tool_search,
        "a2a": virtual.a2a,
        "members": [
            {
                "server": member.server.path,
                "key": member.key,
                "tools": member.tools,
                "prompts": member.prompts,
                "resources": member.resources,
                "tool_settings": member.tool_settings,
            }
            for member in members
        ],
        "skills": sorted(skill.path for skill in virtual.skills.all()),
        "agents": [{"agent": row.agent.path, "key": row.key} for row in _agent_members(virtual)],
        "health": health_of(virtual, members),
        "created_at": virtual.created_at.isoformat(),
        "updated_at": virtual.updated_at.isoformat(),
    }


def _tool_names(server_ids) -> dict[int, list[str]]:
    names = defaultdict(list)
    rows = Tool.objects.filter(server_id__in=list(server_ids)).values_list("server_id", "name")
    for server_id, name in rows:
        names[server_id].append(name)
    return names


def left_out(virtual: VirtualServer, tool_names: dict[int, list[str]] | None = None) -> list[str]:
    """Known tools a member carries whose name clients would see twice: left out (the console says so).
    `tool_names`: the known tools' names by server id, when already read."""
    seen, notes = {}, []
    members = _members(virtual)
    names = tool_names if tool_names is not None else _tool_names(m.server_id for m in members)
    for member in members:
        for name in sorted(names.get(member.server_id, ())):
            if not carried(member.tools, name):
                continue
            shown = exposed_name(member.tool_settings, name)
            if shown in seen:
                notes.append(
                    f"{name} of {member.server.path} is left out: clients already see {shown} "
                    f"from {seen[shown]}."
                )
            else:
                seen[shown] = member.server.path
    return notes


def shown_definitions() -> list[dict]:
    """Every virtual server's definition and the tools it leaves out, by path, in three queries."""
    ordered = VirtualMember.objects.select_related("server").order_by("position")
    agents = VirtualAgent.objects.select_related("agent").order_by("position")
    virtuals = list(
        VirtualServer.objects.order_by("path").prefetch_related(
            Prefetch("members", ordered), Prefetch("agent_members", agents), "skills"
        )
    )
    names = _tool_names({member.server_id for virtual in virtuals for member in virtual.members.all()})
    return [{**definition_of(virtual), "left_out": left_out(virtual, names)} for virtual in virtuals]


def schemas_of_servers(servers) -> dict[int, dict[str, dict]]:
    """Known tools' input schemas by server id (servers without known tools are absent)."""
    schemas: dict[int, dict[str, dict]] = defaultdict(dict)
    for server_id, name, schema in Tool.objects.filter(server__in=list(servers)).values_list(
        "server_id", "name", "input_schema"
    ):
        schemas[server_id][name] = schema or {}
    return dict(schemas)


def servers_by_path(paths) -> dict[str, Server]:
    return {server.path: server for server in Server.objects.filter(path__in=list(paths))}


def skills_served(virtual: VirtualServer, principal) -> list[dict]:
    """The skills a virtual server serves that `principal` may see, as its page lists them."""
    served = served_over_mcp(virtual.skills.values_list("pk", flat=True), principal)
    return [
        {
            "path": "/" + entry["uri"].removeprefix(over_mcp.SCHEME).removesuffix(f"/{over_mcp.SKILL_MD}"),
            "name": entry["frontmatter"].get("name", ""),
            "description": entry["frontmatter"].get("description", ""),
            "uri": entry["uri"],
            "files": len(entry["resources"]),
        }
        for entry in served.entries
    ]
