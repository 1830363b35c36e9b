"""The page of one server (`/servers/<path>`): its health now and over the last day and week (with the
reasons of each change), its tools as parameter tables with how often each was called through the
gateway, and its MCP URL with ready configurations for the hosts people use. The same rules as every
surface: an unseen server is a 404, tools are those the caller is shown."""

import json
from dataclasses import dataclass
from datetime import timedelta

from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from accounts.choices import UiPermission
from accounts.views import session_page
from core.errors import ApiError
from core.metrics_client import reporting_on
from core.targets import TARGETS
from metrics.plots import server_tool_usage
from servers.choices import DETAILED, HEALTH_MEANINGS, HealthStatus, UpstreamAuth
from servers.clients import gateway_base_url, gateway_transport, host_configurations
from servers.policies import server_visible, tools_visible
from servers.recheck import next_check_at
from servers.uptime import uptime
from servers.views import problem_page

HISTORY_SHOWN = 20


@dataclass(frozen=True)
class Parameter:
    name: str
    type: str
    required: bool
    description: str


def parameters(schema) -> list[Parameter]:
    """A tool's input schema as the rows of a table: each property with its type, whether it is
    required, and its description."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return []
    required = set(schema.get("required") or []) if isinstance(schema.get("required"), list) else set()
    rows = []
    for name, spec in schema["properties"].items():
        spec = spec if isinstance(spec, dict) else {}
        kind = spec.get("type")
        if kind is None and isinstance(spec.get("anyOf"), list):
            kind = " or ".join(
                str(option.get("type", "?")) for option in spec["anyOf"] if isinstance(option, dict)
            )
        if isinstance(kind, list):
            kind = " or ".join(str(item) for item in kind)
        rows.append(
            Parameter(str(name), str(kind or "any"), name in required, str(spec.get("description", "")))
        )
    return rows


def _example(kind: str):
    """A placeholder value of a parameter's type, for the "try it" form's starting arguments."""
    first = kind.split(" or ")[0]
    return {"integer": 0, "number": 0, "boolean": False, "array": [], "object": {}, "null": None}.get(
        first, ""
    )


def _tool_row(principal, server, tool, usage) -> dict:
    """One tool on the page: its parameter table, its calls, whether the viewer may call it, and the
    starting arguments of its "try it" form."""
    rows = parameters(tool.input_schema)
    return {
        "tool": tool,
        "parameters": rows,
        "usage": usage.get(tool.name),
        "may_call": principal.allows_mcp(server.path, "tools/call", tool.name),
        "example": json.dumps({row.name: _example(row.type) for row in rows}, indent=2),
    }


@require_GET
@session_page
def server_page(request, principal, service_path):
    """GET /servers/<path>: the server page, for those who see the server."""
    try:
        server = server_visible(principal, service_path)
    except ApiError as refusal:
        return problem_page(request, refusal)
    now = timezone.now()
    base = gateway_base_url(request)
    usage = {series.name: series for series in server_tool_usage(server.path, 24, now)}
    tools = [
        _tool_row(principal, server, tool, usage)
        for tool in tools_visible(principal, server).order_by("name")
    ]
    context = {
        "server": server,
        "shows_detail": bool(server.health_detail) and server.health_status in DETAILED,
        "meaning": HEALTH_MEANINGS.get(HealthStatus(server.health_status), ""),
        "next_check_at": next_check_at(server),
        "day": uptime(server, since=now - timedelta(days=1), now=now),
        "week": uptime(server, since=now - timedelta(days=7), now=now),
        "history": list(server.health_transitions.order_by("-at", "-id")[:HISTORY_SHOWN]),
        "tools": tools,
        "usage_reported": reporting_on(),
        "restrictions": TARGETS.restrictions_of([("server", server.path, tuple(server.tags or ()))]).get(
            server.path, []
        ),
        "gateway_url": gateway_transport(server, base)["url"],
        "hosts": host_configurations(server, base),
        "may_make_token": principal.user is not None and not principal.user.is_service_account,
        "can_edit": principal.can(UiPermission.MODIFY_SERVICE, server.path),
        "may_connect_discovery": principal.is_admin and server.upstream_auth == UpstreamAuth.USER_OAUTH,
    }
    return render(request, "servers/server.html", context)
