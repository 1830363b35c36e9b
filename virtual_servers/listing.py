"""Virtual servers where callers find servers: the /v0.1 listing (catalog/listing.py merges these rows
with the servers' and the published versions', in name order), the dashboard and search. A caller sees
the virtual servers its rights show, by the servers' one rule (`Principal.server_visibility`: any rule
naming the path, or every server), enabled or not, as it sees servers.

A virtual server's /v0.1 entry is a ServerResponse like a gateway server's: its registry name
(`io.<namespace>/<path>`), one version, the gateway URL as its one remote, and `_meta` saying it is
virtual, its members and its health derived from theirs."""

from __future__ import annotations

import json

from django.conf import settings
from django.db.models import Prefetch, Q
from django.db.models.functions import Collate

from core.timestamps import rfc3339
from servers.naming import server_name
from servers.v01_responses import DESCRIPTION_MAX, OFFICIAL_META
from virtual_servers.models import VirtualMember, VirtualServer
from virtual_servers.selectors import health_of

VERSION = "1.0.0"  # a virtual server has one version: its current definition
DASHBOARD_LIMIT = 200


def visible_to(principal):
    """The virtual servers `principal` may see, by path, their members prefetched."""
    sees_all, paths = principal.server_visibility()
    rows = VirtualServer.objects.all() if sees_all else VirtualServer.objects.filter(path__in=paths)
    members = VirtualMember.objects.select_related("server").order_by("position")
    return rows.prefetch_related(Prefetch("members", queryset=members))


def _matching(rows, text: str):
    return rows.filter(Q(name__icontains=text) | Q(description__icontains=text) | Q(path__icontains=text))


def registry_entries(
    principal,
    *,
    after: str | None,
    limit: int,
    base_url: str,
    search: str = "",
    updated_since=None,
    version: str | None = None,
) -> list[tuple[str, str, str]]:
    """At most `limit` rows `(name, version, ServerResponse JSON text)` of the virtual servers
    `principal` sees after the path `after`, in name order (paths compared as bytes)."""
    if version and version not in ("latest", VERSION):
        return []
    rows = visible_to(principal).alias(path_c=Collate("path", "C")).order_by("path_c")
    if search:
        rows = _matching(rows, search)
    if updated_since is not None:
        rows = rows.filter(updated_at__gte=updated_since)
    if after is not None:
        rows = rows.filter(path_c__gt=after)
    found = []
    for virtual in rows[:limit]:
        entry = registry_entry(virtual, list(virtual.members.all()), base_url=base_url)
        found.append((entry["server"]["name"], VERSION, json.dumps(entry, separators=(",", ":"))))
    return found


def registry_entry(virtual: VirtualServer, members: list[VirtualMember], *, base_url: str) -> dict:
    namespace = settings.REGISTRY_NAMESPACE
    name = server_name(virtual.path)
    title = (virtual.name or name)[:DESCRIPTION_MAX]
    health = health_of(virtual, members)["status"]
    updated = rfc3339(virtual.updated_at)
    return {
        "server": {
            "name": name,
            "description": (virtual.description.strip() or title)[:DESCRIPTION_MAX],
            "version": VERSION,
            "title": title,
            "remotes": [{"type": "streamable-http", "url": f"{base_url}{virtual.path}/mcp"}],
            "_meta": {
                f"io.{namespace}/internal": {
                    "path": virtual.path,
                    "is_enabled": virtual.is_enabled,
                    "health_status": health,
                    "virtual": True,
                    "members": [member.server.path for member in members],
                }
            },
        },
        "_meta": {
            f"io.{namespace}/registry": {"last_checked": None, "health_status": health},
            OFFICIAL_META: {
                "status": "active",
                "publishedAt": rfc3339(virtual.created_at),
                "updatedAt": updated,
                "isLatest": True,
            },
        },
    }


def dashboard_section(principal, base_url: str, query: str = "") -> dict | None:
    """The dashboard's section of virtual servers (servers/views.py, through core/targets.py): those the
    caller sees matching the dashboard's search text, with what a client needs to reach each; None when
    none."""
    rows = visible_to(principal).order_by("path")
    if query:
        rows = _matching(rows, query)
    shown = []
    for virtual in rows[:DASHBOARD_LIMIT]:
        members = list(virtual.members.all())
        url = f"{base_url}{virtual.path}/mcp"
        slug = virtual.path.strip("/").replace("/", "-")
        config = {"mcpServers": {slug: {"type": "http", "url": url}}}
        shown.append(
            {
                "virtual": virtual,
                "health": health_of(virtual, members)["status"],
                "members": [member.server.path for member in members],
                "gateway_url": url,
                "client_config": json.dumps(config, indent=2),
            }
        )
    return {"template": "virtual_servers/dashboard_section.html", "rows": shown} if shown else None
