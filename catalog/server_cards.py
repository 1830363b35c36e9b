"""MCP Server Cards (SEP-2127, the server-card extension's schema v1) for what the gateway serves: each
server and virtual server has one at `<its gateway MCP URL>/server-card`, built from the entry `/v0.1`
gives the same caller (so it shows nothing `/v0.1` would not): identity, the gateway's remote with the
protocol revisions it speaks, and the registry's `_meta`. A card lists no tools, prompts or resources:
clients list those through the protocol."""

from __future__ import annotations

import json

from core.etags import etag_of
from core.protocol_versions import SPOKEN

SCHEMA = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
MEDIA_TYPE = "application/mcp-server-card+json"
TEXT_MAX = 100  # description and title: 1 to 100 characters
COPIED = ("title", "websiteUrl", "repository", "icons")
REMOTE_TYPES = ("streamable-http", "sse")
HEADER_FIELDS = ("name", "description", "isRequired", "isSecret", "default", "choices", "placeholder")


def card_of(entry: dict) -> dict:
    """The Server Card of a `/v0.1` ServerResponse."""
    server = entry["server"]
    card = {
        "$schema": SCHEMA,
        "name": server["name"],
        "version": server["version"],
        "description": (server.get("description") or server.get("title") or server["name"])[:TEXT_MAX],
    }
    card |= {field: server[field] for field in COPIED if server.get(field)}
    if "title" in card:
        card["title"] = card["title"][:TEXT_MAX]
    remotes = [_remote(remote) for remote in server.get("remotes", []) if remote.get("type") in REMOTE_TYPES]
    if remotes:
        card["remotes"] = remotes
    if server.get("_meta"):
        card["_meta"] = server["_meta"]
    return card


def _remote(remote: dict) -> dict:
    out = {"type": remote["type"], "url": remote["url"], "supportedProtocolVersions": list(SPOKEN)}
    headers = [
        {field: header[field] for field in HEADER_FIELDS if field in header}
        for header in remote.get("headers", [])
        if isinstance(header, dict) and header.get("name")
    ]
    if headers:
        out["headers"] = headers
    return out


def body_and_etag(card: dict) -> tuple[bytes, str]:
    body = json.dumps(card, separators=(",", ":"), sort_keys=True).encode()
    return body, etag_of(body)
