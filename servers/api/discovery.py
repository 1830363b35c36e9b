"""GET /.well-known/mcp-servers: the public discovery document of enabled servers, and of what apps above
servers add through the targets' registry, core/targets.py (enabled virtual servers).

No authentication; cacheable by anyone for DISCOVERY_CACHE_TTL seconds; an ETag over the body lets
clients revalidate with If-None-Match and get 304. Each web process keeps the body it built, per base URL,
until a server is saved or deleted anywhere (servers/cache.LISTINGS), at most DISCOVERY_CACHE_TTL: with
10,000 servers the document takes about a second to build and is the same for every caller."""

import json

from django.conf import settings
from django.http import HttpResponse, HttpResponseNotModified
from django.utils import timezone
from django.views.decorators.http import require_GET

from core.etags import etag_of, unchanged
from core.targets import TARGETS
from core.timestamps import rfc3339
from servers.cache import HEALTH, LISTINGS
from servers.clients import gateway_base_url, gateway_transport
from servers.naming import server_name
from servers.selectors import servers_for_discovery


def discovery_document(request) -> dict:
    base = gateway_base_url(request)
    servers = servers_for_discovery()
    others = [entry for entries in TARGETS.discovery_entries for entry in entries(base)]
    updated = max((max(filter(None, (s.updated_at, s.last_checked_at))) for s in servers), default=None)
    return {
        "servers": [
            {
                "id": server_name(server.path),
                "name": server.name,
                "description": server.description,
                "path": server.path,
                "mcp": gateway_transport(server, base),
                "authentication": {
                    "required": True,
                    "type": "bearer",
                    "token_endpoint": f"{base}/api/auth/token",
                },
                "health_status": server.health_status,
                "last_checked": rfc3339(server.last_checked_at) if server.last_checked_at else None,
                "tags": list(server.tags),
                "num_tools": server.num_tools,
                "tools_preview": [
                    {"name": t.name, "description": t.description} for t in server.preview_tools
                ],
            }
            for server in servers
        ]
        + others,
        "_meta": {
            "registry": settings.REGISTRY_SERVICE_NAME,
            "namespace": f"io.{settings.REGISTRY_NAMESPACE}",
            "updated_at": rfc3339(updated or timezone.now()),
        },
    }


def _document_body(request) -> tuple[bytes, str]:
    """(body, etag) of the document, from this process's cache while no server has changed; one build at a
    time per process, requests meanwhile getting the document it replaces (core/epochs.py)."""

    def build() -> tuple[bytes, str]:
        body = json.dumps(discovery_document(request), separators=(",", ":")).encode()
        return body, etag_of(body)

    # Health changes move HEALTH, not LISTINGS (servers/cache.py): the document shows them at once.
    key = ("discovery", gateway_base_url(request), HEALTH.epoch())
    return LISTINGS.get_or_build(key, build, ttl_seconds=settings.DISCOVERY_CACHE_TTL)


@require_GET
def well_known_mcp_servers(request):
    body, etag = _document_body(request)
    cache_control = f"public, max-age={settings.DISCOVERY_CACHE_TTL}"
    if unchanged(request.headers.get("If-None-Match", ""), etag):
        response = HttpResponseNotModified()
    else:
        response = HttpResponse(body, content_type="application/json")
    response["ETag"] = etag
    response["Cache-Control"] = cache_control
    return response
