"""What clients see of a member's tools, prompts and resources through a virtual server, and back:

- a tool: its alias (else its name), the description override (else its own), its input schema without
  the fixed arguments (gone from `properties` and `required`); a call by the name clients see reaches
  the member under the tool's own name with the fixed arguments added;
- a prompt: as it is (a name two members share is carried from the first);
- a resource (and a resource template): when one member carries resources, its URI as it is; when
  several do, `<member key>+<its URI>`, which is unique per member and reversible (a key holds no `+`);
  reading, subscribing, unsubscribing and completing take that URI back, and a member's notice about a
  resource names it as clients see it.

A name two members' live lists share is carried from the first member (the definition was refused if
their known tools collided when it was saved; a tool added since is left out and the console says so)."""

from __future__ import annotations

import copy
from dataclasses import dataclass

from virtual_servers.rules import carried, exposed_name, resource_carried

URI_SEPARATOR = "+"


@dataclass(frozen=True)
class Member:
    """A member as the gateway needs it (virtual_servers/selectors.py builds these)."""

    key: str
    server: object  # servers.models.Server
    tools: dict
    prompts: dict
    resources: dict
    tool_settings: dict


def tool_seen(tool: dict, member: Member) -> dict | None:
    """The tool as clients see it, or None when the member does not carry it."""
    name = tool.get("name")
    if not isinstance(name, str) or not carried(member.tools, name):
        return None
    setting = member.tool_settings.get(name) or {}
    seen = dict(tool)
    seen["name"] = exposed_name(member.tool_settings, name)
    if setting.get("description") is not None:
        seen["description"] = setting["description"]
    fixed = setting.get("fixed") or {}
    schema = tool.get("inputSchema")
    if fixed and isinstance(schema, dict):
        schema = copy.deepcopy(schema)
        if isinstance(schema.get("properties"), dict):
            for argument in fixed:
                schema["properties"].pop(argument, None)
        if isinstance(schema.get("required"), list):
            schema["required"] = [r for r in schema["required"] if r not in fixed]
        seen["inputSchema"] = schema
    return seen


def prompt_seen(prompt: dict, member: Member) -> dict | None:
    name = prompt.get("name")
    return prompt if isinstance(name, str) and carried(member.prompts, name) else None


def carries_resources(member: Member) -> bool:
    return member.resources.get("include") != []


def uris_prefixed(members) -> bool:
    """Whether clients see members' resource URIs prefixed by their keys (several members carry some)."""
    return sum(1 for member in members if carries_resources(member)) > 1


def uri_seen(uri: str, member: Member, prefixed: bool) -> str:
    return f"{member.key}{URI_SEPARATOR}{uri}" if prefixed else uri


def resource_seen(resource: dict, member: Member, prefixed: bool, field: str = "uri") -> dict | None:
    """A resource (`uri`) or resource template (`uriTemplate`) as clients see it, or None."""
    uri = resource.get(field)
    if not isinstance(uri, str) or not resource_carried(member.resources, uri):
        return None
    return {**resource, field: uri_seen(uri, member, prefixed)} if prefixed else resource


def resource_of(uri: str, members: list[Member]) -> tuple[Member, str] | None:
    """The member and the member's own URI of a URI clients see, when the member carries it."""
    if uris_prefixed(members):
        key, separator, own = uri.partition(URI_SEPARATOR)
        member = next((member for member in members if member.key == key), None) if separator else None
    else:
        member, own = next((member for member in members if carries_resources(member)), None), uri
    if member is None:
        return None
    return (member, own) if resource_carried(member.resources, own) else None


def tool_index(members, known: dict[str, set[str]]) -> dict[str, tuple[Member, str]]:
    """Every name clients may call → (the member, the tool's own name): an alias first (the first member's
    that gives it), then a carried tool of that name among a member's known tools (`known`: member key →
    tool names; the first member that carries it)."""
    aliases: dict[str, tuple[Member, str]] = {}
    for member in members:
        for own, setting in member.tool_settings.items():
            alias = (setting or {}).get("alias")
            if alias and carried(member.tools, own):
                aliases.setdefault(alias, (member, own))
    plain: dict[str, tuple[Member, str]] = {}
    for member in members:
        for name in known.get(member.key, ()):
            if not (member.tool_settings.get(name) or {}).get("alias") and carried(member.tools, name):
                plain.setdefault(name, (member, name))
    return {**plain, **aliases}


def fixed_of(member: Member, own: str) -> dict:
    return dict((member.tool_settings.get(own) or {}).get("fixed") or {})
