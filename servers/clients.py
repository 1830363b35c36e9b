"""How MCP clients reach servers through the built-in gateway: the public base URL, each server's
transport URL, and a ready-to-paste client configuration. One place for every surface that shows them
(/v0.1, the discovery document, the dashboard, the token page)."""

from __future__ import annotations

import json

from core.public_url import base_url
from servers.choices import Transport
from servers.models import Server


def gateway_base_url(request) -> str:
    """GATEWAY_PUBLIC_URL, or the URL the request came in on (core/public_url.py)."""
    return base_url(request)


def gateway_transport(server: Server, base_url: str) -> dict:
    """How clients reach the server through the gateway: `<base>/<path>/mcp` (or `/sse`)."""
    if server.supported_transports == [Transport.SSE]:
        return {"type": "sse", "url": f"{base_url}{server.path}/sse"}
    return {"type": "streamable-http", "url": f"{base_url}{server.path}/mcp"}


def client_config(servers, base_url: str, token: str | None = None) -> str:
    """An `mcpServers` configuration (the shape MCP hosts read) for `servers`: with the token, or without
    one for hosts that log in by themselves (OAuth discovery from the URL alone, docs/auth.md)."""
    entries = {}
    for server in servers:
        transport = gateway_transport(server, base_url)
        entries[server.path.strip("/").replace("/", "-")] = {
            "type": "http" if transport["type"] == "streamable-http" else "sse",
            "url": transport["url"],
            **({"headers": {"Authorization": f"Bearer {token}"}} if token else {}),
        }
    return json.dumps({"mcpServers": entries}, indent=2)


def host_configurations(server: Server, base_url: str) -> list[tuple[str, str, str]]:
    """(host, where it goes, what to paste) for the MCP hosts people use most, each reaching the server
    through the gateway and signing in by itself (OAuth from the URL alone, docs/auth.md)."""
    transport = gateway_transport(server, base_url)
    name = server.path.strip("/").replace("/", "-")
    kind = "http" if transport["type"] == "streamable-http" else "sse"
    url = transport["url"]
    return [
        ("Claude Code", "a terminal", f"claude mcp add --transport {kind} {name} {url}"),
        (
            "VS Code",
            ".vscode/mcp.json",
            json.dumps({"servers": {name: {"type": kind, "url": url}}}, indent=2),
        ),
        ("Cursor", "~/.cursor/mcp.json", json.dumps({"mcpServers": {name: {"url": url}}}, indent=2)),
    ]
