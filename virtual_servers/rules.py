"""The one rule for a virtual server's definition, for every surface (the JSON API, the console): the
shape of each member, the names clients will see, and what may be fixed.

A member is
    {"server": "/clock", "key": "clock",
     "tools": {"include": ["add"]}, "prompts": {}, "resources": {"exclude": ["file:///secret"]},
     "tool_settings": {"add": {"alias": "plus", "description": "Adds.", "fixed": {"b": 1}}}}
with `tools`, `prompts` and `resources` each `{}` (all), `{"include": [...]}` or `{"exclude": [...]}`,
and `key` (default: the server path's last segment) naming the member in resource URIs.

What clients see of a tool: its alias (else its name), the description override (else its own), and its
input schema without the fixed arguments (which the gateway sends itself; a call that names one is
refused). Names clients see must be unique across members: a definition whose known tools collide is
refused, naming both."""

from __future__ import annotations

import json
import re
from urllib.parse import unquote, urlsplit

from core.validators import normalize_path
from servers import scanning

KEY = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")  # the MCP tool-name rule (SEP-986)
SELECTIONS = ("tools", "prompts", "resources")
MAX_MEMBERS = 50
MAX_NAMES = 500
NAME_MAX_LENGTH = 2048  # a resource URI may be long
DESCRIPTION_MAX_LENGTH = 4000
FIXED_MAX_BYTES = 16 * 1024


class DefinitionRefused(ValueError):
    """A definition the registry will not store: `problems` by field (`members[1].tool_settings` ...)."""

    def __init__(self, problems: dict[str, str]):
        super().__init__("; ".join(f"{k}: {v}" for k, v in problems.items()))
        self.problems = problems


def default_key(server_path: str) -> str:
    return re.sub(r"[^a-z0-9-]", "-", server_path.rsplit("/", 1)[-1])[:40].strip("-") or "member"


def selection_problem(value) -> str | None:
    if not isinstance(value, dict):
        return 'Give {} (everything), {"include": [...]} or {"exclude": [...]}.'
    if len(value) > 1 or (value and next(iter(value)) not in ("include", "exclude")):
        return 'Give {} (everything), {"include": [...]} or {"exclude": [...]}, not both.'
    names = next(iter(value.values()), [])
    if not isinstance(names, list) or len(names) > MAX_NAMES:
        return f"A list of at most {MAX_NAMES} names."
    if not all(isinstance(n, str) and 0 < len(n) <= NAME_MAX_LENGTH for n in names):
        return f"Each name is a non-empty string of at most {NAME_MAX_LENGTH} characters."
    return None


def carried(selection: dict, name: str) -> bool:
    """Whether a selection ({}, include, exclude) carries `name`."""
    if "include" in selection:
        return name in selection["include"]
    return name not in selection.get("exclude", ())


def resource_carried(selection: dict, uri: str) -> bool:
    """Whether a resources selection carries `uri`: an include list by the exact URI (a template's
    expansions are not named there); an exclude list by every spelling of a URI, so what it leaves out
    is not reached as `FILE:///x`, `file:///./x`, `file:///%78`, `file:///x/` or `file:///x?y`."""
    if "include" in selection:
        return uri in selection["include"]
    key = _uri_key(uri)
    return all(_uri_key(excluded) != key for excluded in selection.get("exclude", ()))


def _uri_key(uri: str) -> tuple[str, str, str]:
    """What every spelling of a URI has in common: scheme and authority in lower case, the path
    percent-decoded, without dot segments, repeated or trailing slashes; query and fragment left out."""
    try:
        parts = urlsplit(uri.strip())
    except ValueError:
        return ("", "", uri)
    segments: list[str] = []
    for segment in unquote(parts.path).split("/"):
        if segment == "..":
            segments = segments[:-1]
        elif segment not in ("", "."):
            segments.append(segment)
    return (parts.scheme.lower(), unquote(parts.netloc).lower(), "/".join(segments))


def settings_problem(value, schemas: dict[str, dict] | None) -> str | None:
    """Problems of `tool_settings`; `schemas` (tool name → input schema) when the server's tools are
    known, so fixed arguments can be checked against what the tool takes."""
    if not isinstance(value, dict) or len(value) > MAX_NAMES:
        return "An object from tool names to their settings."
    for name, setting in value.items():
        if not isinstance(setting, dict) or set(setting) - {"alias", "description", "fixed"}:
            return f"{name}: settings are an object of alias, description and fixed."
        alias = setting.get("alias")
        if alias is not None and (not isinstance(alias, str) or not TOOL_NAME.match(alias)):
            return f"{name}: an alias is 1 to 128 letters, digits, '_', '-' or '.'."
        description = setting.get("description")
        if description is not None and (
            not isinstance(description, str) or len(description) > DESCRIPTION_MAX_LENGTH
        ):
            return f"{name}: a description is text of at most {DESCRIPTION_MAX_LENGTH} characters."
        if description is not None and (problem := _scan_problem(alias or name, description)):
            return f"{name}: {problem}"
        fixed = setting.get("fixed", {})
        if not isinstance(fixed, dict) or len(json.dumps(fixed)) > FIXED_MAX_BYTES:
            return f"{name}: fixed arguments are an object of at most {FIXED_MAX_BYTES} bytes."
        if schemas is not None and fixed:
            if name not in schemas:
                return f"{name}: the server offers no such tool."
            properties = (schemas[name] or {}).get("properties")
            unknown = sorted(set(fixed) - set(properties)) if isinstance(properties, dict) else []
            if unknown:
                return f"{name}: the tool takes no argument {', '.join(unknown)}."
    return None


def _scan_problem(shown_as: str, description: str) -> str | None:
    """A description override is what reaches models in place of the tool's own: the scan that holds a
    server's tools (servers/scanning.py) refuses it."""
    findings = scanning.scan({"name": shown_as, "description": description})
    if not scanning.holds(findings):
        return None
    worst = findings[0]
    return f"the description has a high-severity scan finding ({worst['rule']}: “{worst['evidence']}”)."


def exposed_name(member_settings: dict, name: str) -> str:
    return (member_settings.get(name) or {}).get("alias") or name


def member_problems(index: int, member, servers: dict, schemas_of) -> tuple[dict[str, str], dict | None]:
    """(problems by field, the member normalized) of one member; `servers` maps paths to servers and
    `schemas_of(server)` gives its known tools' input schemas (None when none are known)."""
    where = f"members[{index}]"
    if not isinstance(member, dict):
        return {where: "A member is an object naming a server."}, None
    unknown = set(member) - {"server", "key", *SELECTIONS, "tool_settings"}
    if unknown:
        return {where: f"Unknown fields: {', '.join(sorted(unknown))}."}, None
    path = normalize_path(member.get("server", "")) if isinstance(member.get("server"), str) else ""
    server = servers.get(path)
    if server is None:
        return {f"{where}.server": f"No server is registered at {path or '(none)'}."}, None
    problems = {}
    key = member.get("key") or default_key(path)
    if not isinstance(key, str) or not KEY.match(key):
        problems[f"{where}.key"] = "A key is 1 to 40 lower-case letters, digits or '-'."
    normal = {"server": server, "key": key, "tool_settings": member.get("tool_settings") or {}}
    for field in SELECTIONS:
        value = member.get(field) or {}
        if problem := selection_problem(value):
            problems[f"{where}.{field}"] = problem
        normal[field] = value
    if problem := settings_problem(normal["tool_settings"], schemas_of(server)):
        problems[f"{where}.tool_settings"] = problem
    return problems, normal


def definition_problems(
    members, servers: dict, schemas_of, *, serves_skills: bool = False
) -> tuple[dict[str, str], list[dict]]:
    """Problems of a whole member list (each member, then keys, servers and names clients see across
    members) and the members normalized. A virtual server that serves skills may have no member."""
    if serves_skills and members in (None, []):
        return {}, []
    if not isinstance(members, list) or not 1 <= len(members) <= MAX_MEMBERS:
        fewest = 0 if serves_skills else 1
        return {"members": f"A virtual server has {fewest} to {MAX_MEMBERS} members."}, []
    problems, normal = {}, []
    for index, member in enumerate(members):
        found, member_normal = member_problems(index, member, servers, schemas_of)
        problems |= found
        if member_normal is not None:
            normal.append(member_normal)
    keys, paths, seen = {}, set(), {}
    for member in normal:
        if member["key"] in keys:
            problems["members"] = f"Two members have the key {member['key']}: give each its own."
        keys[member["key"]] = member
        if member["server"].path in paths:
            problems["members"] = f"{member['server'].path} is a member twice."
        paths.add(member["server"].path)
        for name in schemas_of(member["server"]) or {}:
            if not carried(member["tools"], name):
                continue
            shown = exposed_name(member["tool_settings"], name)
            if shown in seen and "members" not in problems:
                other_path, other_name = seen[shown]
                problems["members"] = (
                    f"Clients would see two tools named {shown}: {other_name} of {other_path} and {name} of "
                    f"{member['server'].path}. Leave one out or give one an alias."
                )
            seen.setdefault(shown, (member["server"].path, name))
    return problems, normal
