"""The /v0.1 response shapes: the official MCP Registry's ServerResponse/ServerList, with the
registry's own `_meta` keys. Plain functions over model rows: listings of thousands stay cheap."""

from django.conf import settings

from servers.clients import gateway_transport
from servers.models import Server
from servers.naming import server_name

DESCRIPTION_MAX = 100  # ServerDetail.description and .title: 1 to 100 characters
OFFICIAL_META = "io.modelcontextprotocol.registry/official"


def _iso(value) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def server_response(server: Server, *, base_url: str) -> dict:
    """One ServerResponse: `server` (a valid server.json ServerDetail) and registry `_meta`."""
    namespace = settings.REGISTRY_NAMESPACE
    name = server_name(server.path)
    title = (server.name or name)[:DESCRIPTION_MAX]
    return {
        "server": {
            "name": name,
            "description": (server.description.strip() or title)[:DESCRIPTION_MAX],
            "version": server.version,
            "title": title,
            # A remote server, reached through the gateway (server.json's RemoteTransport).
            "remotes": [gateway_transport(server, base_url)],
            "_meta": {
                f"io.{namespace}/internal": {
                    "path": server.path,
                    "is_enabled": server.is_enabled,
                    "health_status": server.health_status,
                    "num_tools": server.num_tools,
                    "tags": list(server.tags),
                    "license": server.license,
                }
            },
        },
        "_meta": {
            f"io.{namespace}/registry": {
                "last_checked": _iso(server.last_checked_at),
                "health_status": server.health_status,
            },
            OFFICIAL_META: {
                "status": "active",
                "publishedAt": _iso(server.created_at),
                "updatedAt": _iso(server.updated_at),
                "isLatest": True,
            },
        },
    }


def server_list(servers, *, base_url: str, next_cursor: str | None) -> dict:
    """A ServerList page. `nextCursor` is left out on the last page: the official schema types it as a
    string, so `null` would not validate (see docs/api.md)."""
    metadata: dict = {"count": len(servers)}
    if next_cursor:
        metadata["nextCursor"] = next_cursor
    return {"servers": [server_response(s, base_url=base_url) for s in servers], "metadata": metadata}
