"""The page of one virtual server (`/virtual-servers/<path>`): what it is, its health from its members',
the operators' quarantine and limits on it, its MCP URL with a client configuration, its members (each a
link to its server's page), the tools clients see under it, with the member and own name behind each,
and the skills it serves that the caller may see.
The same rule as every surface: a virtual server the caller does not see is a 404."""

import json

from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from accounts.views import session_page
from core.targets import TARGETS
from core.validators import normalize_path
from metrics.plots import tools_usage
from servers.clients import gateway_base_url
from virtual_servers.listing import visible_to
from virtual_servers.selectors import health_of, skills_served, tools_seen


@require_GET
@session_page
def virtual_server_page(request, principal, virtual_path):
    path = normalize_path(virtual_path)
    virtual = visible_to(principal).filter(path=path).first()
    if virtual is None:
        context = {"status": 404, "message": f"No virtual server you can see is at {path}."}
        return render(request, "servers/problem.html", context, status=404)
    rows = list(virtual.members.all())
    url = f"{gateway_base_url(request)}{virtual.path}/mcp"
    slug = virtual.path.strip("/").replace("/", "-")
    context = {
        "virtual": virtual,
        "health": health_of(virtual, rows)["status"],
        "members": rows,
        "tools": _tools_seen(principal, virtual),
        "skills": skills_served(virtual, principal),
        "gateway_url": url,
        "client_config": json.dumps({"mcpServers": {slug: {"type": "http", "url": url}}}, indent=2),
        "restrictions": TARGETS.restrictions_of([("virtual_server", virtual.path, ())]).get(virtual.path, []),
        "edit_url": reverse("admin:virtual_servers_virtualserver_change", args=[virtual.pk])
        if principal.is_admin
        else "",
    }
    return render(request, "virtual_servers/page.html", context)


def _tools_seen(principal, virtual) -> list[dict]:
    """The tools clients see under the virtual server, with where each comes from, whether the caller
    may call it (a virtual server grants no more than its members do), and its calls of the last 24 hours
    at its member's server (p50, p95, errors: metrics/plots.py)."""
    seen = tools_seen(virtual)
    usage = {
        server: {series.name: series for series in found}
        for server, found in tools_usage({server for _, server, _ in seen}, 24).items()
    }
    return [
        {
            "name": name,
            "server": server,
            "own": own,
            "may_call": principal.allows_mcp(virtual.path, "tools/call", name)
            and principal.allows_mcp(server, "tools/call", own),
            "usage": usage.get(server, {}).get(own),
        }
        for name, server, own in seen
    ]
