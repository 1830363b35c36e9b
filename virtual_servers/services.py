"""Writes of virtual servers, for every surface (the JSON API, the console): a whole definition checked by
the one rule (virtual_servers/rules.py), stored with its members in one transaction, and audited."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from accounts.choices import AuditAction
from accounts.services import actor_user, audit_event_record
from core.validators import normalize_path, validate_registry_path
from servers.models import Server
from skills.models import Skill
from virtual_servers.models import VirtualAgent, VirtualMember, VirtualServer
from virtual_servers.rules import KEY, MAX_MEMBERS, DefinitionRefused, default_key, definition_problems
from virtual_servers.selectors import schemas_of_servers, servers_by_path

NAME_MAX_LENGTH = 200
DESCRIPTION_MAX_LENGTH = 4000


def definition_checked(
    definition: dict, *, path: str, existing: VirtualServer | None
) -> tuple[dict, list[dict]]:
    """(the virtual server's own fields, its members normalized), or DefinitionRefused."""
    problems = {}
    if not isinstance(definition, dict):
        raise DefinitionRefused({"definition": "A definition is a JSON object."})
    try:
        validate_registry_path(path)
    except ValidationError as invalid:
        problems["path"] = invalid.messages[0]
    if Server.objects.filter(path=path).exists():
        problems["path"] = f"A server is registered at {path}: a virtual server needs a path of its own."
    if existing is None and VirtualServer.objects.filter(path=path).exists():
        problems["path"] = f"A virtual server already has the path {path}."
    name = definition.get("name", existing.name if existing else "")
    if not isinstance(name, str) or not name.strip() or len(name) > NAME_MAX_LENGTH:
        problems["name"] = f"A name is 1 to {NAME_MAX_LENGTH} characters."
    description = definition.get("description", existing.description if existing else "")
    if not isinstance(description, str) or len(description) > DESCRIPTION_MAX_LENGTH:
        problems["description"] = f"A description is text of at most {DESCRIPTION_MAX_LENGTH} characters."
    is_enabled = definition.get("is_enabled", existing.is_enabled if existing else True)
    if not isinstance(is_enabled, bool):
        problems["is_enabled"] = "true or false."
    tool_search = definition.get("tool_search", existing.tool_search if existing else False)
    if not isinstance(tool_search, bool):
        problems["tool_search"] = "true or false."
    a2a = definition.get("a2a", existing.a2a if existing else False)
    if not isinstance(a2a, bool):
        problems["a2a"] = "true or false."
    members = definition.get("members")
    paths = [
        normalize_path(m["server"])
        for m in members or []
        if isinstance(m, dict) and isinstance(m.get("server"), str)
    ]
    servers = servers_by_path(paths)
    schemas = schemas_of_servers(servers.values())
    skills, problem = _skills_named(definition.get("skills", None), existing)
    if problem:
        problems["skills"] = problem
    agents, agents_problem = _agents_named(definition.get("agents", None), existing)
    if agents_problem:
        problems["agents"] = agents_problem
    found, normal = definition_problems(
        members,
        servers,
        lambda server: schemas.get(server.pk),
        serves_skills=bool(skills or problem or agents or agents_problem),
    )
    if any(agent["key"] == member["key"] for agent in agents for member in normal):
        problems["agents"] = "A member and an agent have the same key: give each its own."
    problems |= found
    if problems:
        raise DefinitionRefused(problems)
    own = {
        "name": name.strip(),
        "description": description,
        "is_enabled": is_enabled,
        "tool_search": tool_search,
        "a2a": a2a,
    }
    return {**own, "skills": skills, "agents": agents}, normal


def _skills_named(value, existing: VirtualServer | None) -> tuple[list[Skill], str | None]:
    """The skills a definition names by path (`skills`: a list; left out, an existing server's stay)."""
    if value is None:
        return (list(existing.skills.all()) if existing else []), None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value) or len(value) > 10_000:
        return [], 'A list of skill paths, such as ["/pdf-tools"].'
    paths = [normalize_path(item) for item in value]
    found = {skill.path: skill for skill in Skill.objects.filter(path__in=paths)}
    if missing := [path for path in paths if path not in found]:
        return [], f"No skill is at {', '.join(sorted(set(missing))[:5])}."
    return [found[path] for path in dict.fromkeys(paths)], None


def _agents_named(value, existing: VirtualServer | None) -> tuple[list[dict], str | None]:
    """The A2A agents a definition carries as tools: `[{"agent": "/helper", "key": "helper"}]` (`key`:
    default the path's last segment; left out, an existing server's stay)."""
    if value is None:
        if existing is None:
            return [], None
        rows = existing.agent_members.select_related("agent").order_by("position")
        return [{"agent": row.agent, "key": row.key} for row in rows], None
    if not isinstance(value, list) or len(value) > MAX_MEMBERS:
        return [], f'A list of at most {MAX_MEMBERS} agents, such as [{{"agent": "/helper"}}].'
    agents, keys = [], set()
    model = VirtualAgent._meta.get_field("agent").related_model
    for entry in value:
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("agent"), str)
            or set(entry) - {"agent", "key"}
        ):
            return [], 'Each agent is {"agent": "<its path>"}, with a "key" if you choose one.'
        path = normalize_path(entry["agent"])
        agent = model.objects.filter(path=path).first()
        if agent is None:
            return [], f"No agent is registered at {path[:200]}."
        key = entry.get("key", default_key(path))
        if not isinstance(key, str) or not KEY.match(key):
            return (
                [],
                "A key is 1 to 40 lower-case letters, digits and dashes, starting with a letter or digit.",
            )
        if key in keys:
            return [], f"Two agents have the key {key}: give each its own."
        keys.add(key)
        agents.append({"agent": agent, "key": key})
    return agents, None


def _store_agents(virtual: VirtualServer, agents: list[dict]) -> None:
    virtual.agent_members.all().delete()
    VirtualAgent.objects.bulk_create(
        VirtualAgent(virtual=virtual, agent=entry["agent"], key=entry["key"], position=position)
        for position, entry in enumerate(agents)
    )


def _store_members(virtual: VirtualServer, members: list[dict]) -> None:
    virtual.members.all().delete()
    VirtualMember.objects.bulk_create(
        VirtualMember(
            virtual=virtual,
            server=member["server"],
            key=member["key"],
            position=position,
            tools=member["tools"],
            prompts=member["prompts"],
            resources=member["resources"],
            tool_settings=member["tool_settings"],
        )
        for position, member in enumerate(members)
    )


def _summary(members: list[dict]) -> list[str]:
    return [member["server"].path for member in members]


def _paths(skills: list[Skill]) -> list[str]:
    return [skill.path for skill in skills]


def virtual_server_create(*, actor, path: str, definition: dict) -> VirtualServer:
    path = normalize_path(path)
    own, members = definition_checked(definition, path=path, existing=None)
    skills, agents = own.pop("skills"), own.pop("agents")
    with transaction.atomic():
        virtual = VirtualServer.objects.create(path=path, created_by=actor_user(actor), **own)
        _store_members(virtual, members)
        _store_agents(virtual, agents)
        virtual.skills.set(skills)
        audit_event_record(
            actor=actor,
            action=AuditAction.VIRTUAL_SERVER_CREATE,
            target=f"virtual_server:{path}",
            detail={
                "name": virtual.name,
                "members": _summary(members),
                "skills": _paths(skills),
                "agents": [entry["agent"].path for entry in agents],
            },
        )
    return virtual


def virtual_server_update(*, actor, virtual: VirtualServer, definition: dict) -> VirtualServer:
    """Replace the definition (members included: a definition is always whole)."""
    own, members = definition_checked(definition, path=virtual.path, existing=virtual)
    skills, agents = own.pop("skills"), own.pop("agents")
    with transaction.atomic():
        for field, value in own.items():
            setattr(virtual, field, value)
        virtual.save()
        _store_members(virtual, members)
        _store_agents(virtual, agents)
        virtual.skills.set(skills)
        audit_event_record(
            actor=actor,
            action=AuditAction.VIRTUAL_SERVER_UPDATE,
            target=f"virtual_server:{virtual.path}",
            detail={
                "name": virtual.name,
                "members": _summary(members),
                "skills": _paths(skills),
                "agents": [entry["agent"].path for entry in agents],
                "enabled": virtual.is_enabled,
                "tool_search": virtual.tool_search,
            },
        )
    return virtual


def virtual_server_delete(*, actor, virtual: VirtualServer) -> None:
    with transaction.atomic():
        audit_event_record(
            actor=actor,
            action=AuditAction.VIRTUAL_SERVER_DELETE,
            target=f"virtual_server:{virtual.path}",
            detail={"name": virtual.name},
        )
        virtual.delete()
