"""The shape of a scope's rules, checked by `Scope.clean()` so every surface that writes scopes (the admin
form, scopes.yml imports, the services) refuses the same malformed rules with the same messages.

A rule that does not parse is refused rather than read generously: a typo must never grant more than
meant (nor quietly less). `server_rules` is a list of `{server, methods, tools}`: `server` is a registry
path or `*` (every server), `methods` a list of MCP method names or `*`, `tools` (for `tools/call`) a
list of tool names or `*`. `ui_permissions` maps a permission (accounts.choices.UiPermission) to a list
of paths or `all`. `publish_names` lists the server.json names the scope may publish, as patterns
(`com.acme/*`, `io.github.acme/weather`): `*` matches any run of characters, and `*` alone every name.
"""

import re

from django.core.exceptions import ValidationError

from accounts.choices import UiPermission
from core.validators import normalize_path, validate_registry_path

ANY_VALUES = ("*", "all")
RULE_KEYS = ("server", "methods", "tools")
# The MCP methods a rule usually names, offered by the admin form; others that look like method names
# (HTTP verbs of the reference's registry rules, newer MCP methods) are accepted too.
KNOWN_METHODS = (
    "initialize",
    "notifications/initialized",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "skills/list",  # the MCP skills extension (SEP-2640)
    "skills/get",
    "resources/directory/read",
)
# The session's own messages in the MCP revisions from 2025-03-26 to 2026-07-28: who may `initialize` a
# server may send them (the rule is applied by gateway/jsonrpc.py).
SESSION_METHODS = frozenset(
    {
        "ping",
        "server/discover",
        "subscriptions/listen",
        "notifications/initialized",
        "notifications/cancelled",
        "notifications/progress",
        "notifications/roots/list_changed",
        "notifications/tasks/status",
    }
)
# Every method a client sends in those revisions; any other is an "other method" that a rule must name.
STANDARD_METHODS = frozenset(
    {*KNOWN_METHODS, *SESSION_METHODS, "tasks/get", "tasks/result", "tasks/list", "tasks/cancel"}
)
METHOD_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(/[A-Za-z][A-Za-z0-9_]*)*$")
TOOL_PATTERN = re.compile(r"^[A-Za-z0-9_.\-/]{1,200}$")
# A server.json name (`namespace/name`, the schema's characters) where `*` may stand for any run of them.
PUBLISH_NAME_PATTERN = re.compile(r"^(\*|[A-Za-z0-9.*-]+/[A-Za-z0-9._*-]+)$")


def _path_problem(value) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return "must be a path such as /weather, or * for every server"
    if value.strip() in ANY_VALUES:
        return None
    try:
        validate_registry_path(normalize_path(value))
    except ValidationError as invalid:
        return f"{value!r}: {invalid.messages[0].rstrip('.')}"
    return None


def _names_problem(value, pattern: re.Pattern, what: str) -> str | None:
    if isinstance(value, str) and value.strip() in ANY_VALUES:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return f"must be a list of {what} or *"
    bad = [item for item in value if item not in ANY_VALUES and not pattern.match(item)]
    if bad:
        return f"{bad[0]!r} is not a {what[:-1]} (one name per entry, no commas or spaces)"
    return None


def server_rules_errors(rules) -> list[str]:
    """Why `rules` is not a list of well-formed rules; empty when it is."""
    if not isinstance(rules, list):
        return ["Server rules must be a list of {server, methods, tools} rules."]
    errors = []
    for number, rule in enumerate(rules, start=1):
        if not isinstance(rule, dict):
            errors.append(f"Rule {number}: must be an object with server, methods and tools.")
            continue
        unknown = sorted(set(rule) - set(RULE_KEYS))
        if unknown:
            errors.append(f"Rule {number}: unknown key {unknown[0]!r} (the keys are server, methods, tools).")
        if problem := _path_problem(rule.get("server")):
            errors.append(f"Rule {number}: server {problem}.")
        methods = rule.get("methods")
        if methods in (None, [], ""):
            errors.append(f"Rule {number}: methods must name at least one MCP method, or *.")
        elif problem := _names_problem(methods, METHOD_PATTERN, "methods"):
            errors.append(f"Rule {number}: methods {problem}.")
        if "tools" in rule and (problem := _names_problem(rule["tools"], TOOL_PATTERN, "tools")):
            errors.append(f"Rule {number}: tools {problem}.")
    return errors


def ui_permissions_errors(permissions) -> list[str]:
    """Why `permissions` is not a map of known permissions to paths; empty when it is."""
    if not isinstance(permissions, dict):
        return ["UI permissions must map a permission name to a list of paths or all."]
    errors = []
    for name, paths in permissions.items():
        if name not in UiPermission.values:
            errors.append(f"{name!r} is not a permission (known: {', '.join(UiPermission.values)}).")
            continue
        entries = [paths] if isinstance(paths, str) else paths
        if not isinstance(entries, list) or not entries:
            errors.append(f"{name}: must be a list of paths, or all.")
            continue
        for path in entries:
            if problem := _path_problem(path):
                errors.append(f"{name}: {problem}.")
    return errors


def publish_names_errors(patterns) -> list[str]:
    """Why `patterns` is not a list of server.json name patterns; empty when it is."""
    if not isinstance(patterns, list) or not all(isinstance(item, str) for item in patterns):
        return ["Publish names must be a list of name patterns such as com.acme/*."]
    bad = [item for item in patterns if len(item) > 200 or not PUBLISH_NAME_PATTERN.match(item)]
    if bad:
        return [
            f"{bad[0]!r} is not a name pattern (namespace/name, * for any characters, such as com.acme/*)."
        ]
    return []
