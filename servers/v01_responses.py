"""The /v0.1 response shapes: the official MCP Registry's ServerResponse/ServerList, with the
registry's own `_meta` keys. Plain functions over model rows: listings of thousands stay cheap."""

from django.conf import settings

from core import attestations
from core.timestamps import rfc3339
from servers.clients import gateway_transport
from servers.models import Server
from servers.naming import server_name
from servers.scanning import SCAN_SCOPE, SCANNER_DISTRIBUTION

DESCRIPTION_MAX = 100  # ServerDetail.description and .title: 1 to 100 characters
OFFICIAL_META = "io.modelcontextprotocol.registry/official"
# Scan receipts in the shape of modelcontextprotocol/registry PR #1404, under ServerDetail's `_meta`.
SCAN_META = "io.modelcontextprotocol.registry/security-scan"


def server_response(server: Server, *, base_url: str) -> dict:
    """One ServerResponse: `server` (a valid server.json ServerDetail) and registry `_meta`."""
    namespace = settings.REGISTRY_NAMESPACE
    name = server_name(server.path)
    title = (server.name or name)[:DESCRIPTION_MAX]
    remote = gateway_transport(server, base_url)
    server_meta = {
        f"io.{namespace}/internal": {
            "path": server.path,
            "is_enabled": server.is_enabled,
            "health_status": server.health_status,
            "num_tools": server.num_tools,
            "tags": list(server.tags),
            "license": server.license,
        }
    }
    if server.tools_scanned_at is not None:
        server_meta[SCAN_META] = [scan_receipt(server, remote["url"])]
    if server.tool_attestation:  # the receipt signed (core/attestations.py): verify with the published keys
        server_meta[attestations.meta_key()] = {"attestation": server.tool_attestation}
    return {
        "server": {
            "name": name,
            "description": (server.description.strip() or title)[:DESCRIPTION_MAX],
            "version": server.version,
            "title": title,
            # A remote server, reached through the gateway (server.json's RemoteTransport).
            "remotes": [remote],
            "_meta": server_meta,
        },
        "_meta": {
            f"io.{namespace}/registry": {
                "last_checked": rfc3339(server.last_checked_at),
                "health_status": server.health_status,
            },
            OFFICIAL_META: {
                "status": "active",
                "publishedAt": rfc3339(server.created_at),
                "updatedAt": rfc3339(server.updated_at),
                "isLatest": True,
            },
        },
    }


def scan_receipt(server: Server, url: str) -> dict:
    """What the registry attests of the tool set the gateway serves for `server` (servers/scanning.py):
    the digest is the pinned set's (servers/pins.set_digest), so a client can compare it with what it
    lists; `findings` means an operator approved a tool over a high-severity finding."""
    return {
        "scanner": SCANNER_DISTRIBUTION,
        "scanner_version": server.tool_scanner_version,
        "rule_set_ref": server.tool_scan_rules,
        "scanned_artifact_ref": f"{url}#tools/list",
        "scanned_artifact_digest": f"sha256:{server.tool_set_digest}",
        "scan_scope": list(SCAN_SCOPE),
        "verdict": server.tool_scan_verdict,
        "scanned_at": rfc3339(server.tools_scanned_at),
        "attestation": "registry-attested",
    }


def server_list(servers, *, base_url: str, next_cursor: str | None) -> dict:
    """A ServerList page. `nextCursor` is left out on the last page: the official schema types it as a
    string, so `null` would not validate (see docs/api.md)."""
    metadata: dict = {"count": len(servers)}
    if next_cursor:
        metadata["nextCursor"] = next_cursor
    return {"servers": [server_response(s, base_url=base_url) for s in servers], "metadata": metadata}
