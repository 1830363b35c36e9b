"""The gateway's callers in tests: the registry's ASGI application on a loopback port, a token for a user
granted given server rules, the official SDK client on a gateway URL, and a raw POST for exact paths.
Test modules import the `*_fixture` functions; each registers under the name without the suffix."""

import http.client
import json

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.mcp_servers import UvicornThread, loopback_socket


@pytest.fixture(name="gateway")
def gateway_fixture():
    """The registry's ASGI application (gateway in front of Django) on a loopback port."""
    from registry_site.asgi import application

    running = UvicornThread(application, loopback_socket()).start()
    yield running
    running.stop()


@pytest.fixture(name="caller")
def caller_fixture(member, scope_factory, token_for):
    """A token for a user granted `rules` (server rules) and nothing else."""

    def make(*rules, name="gina"):
        scope_factory(f"{name}-scope", group=f"{name}-group", server_rules=list(rules))
        return token_for(member(name, f"{name}-group"))

    return make


async def _session(url: str, token: str | None, work, mode: str, extra: dict | None):
    headers = {**(extra or {}), **({"Authorization": f"Bearer {token}"} if token else {})}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(20)) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as client:
            return await work(client)


def run(url: str, token: str | None, work, mode: str = "legacy", headers: dict | None = None):
    """`work(client)` in a session of the official SDK client: `legacy` (the initialize handshake),
    `auto` (2026-07-28 when the server speaks it) or a 2026-07-28 version pin; `headers` go with every
    request."""
    return anyio.run(_session, url, token, work, mode, headers)


async def list_and_call(client):
    tools = sorted(tool.name for tool in (await client.list_tools()).tools)
    added = await client.call_tool("add", {"a": 2, "b": 3})
    try:
        await client.call_tool("current_time", {"timezone": "UTC"})
        denied = None
    except MCPError as error:
        denied = str(error)
    return tools, added.content[0].text, denied


def post(port: int, path: str, body, headers: dict | None = None) -> tuple[int, dict, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    payload = body if isinstance(body, bytes) else json.dumps(body).encode()
    connection.request(
        "POST",
        path,
        payload,
        {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **(headers or {}),
        },
    )
    response = connection.getresponse()
    return response.status, dict(response.getheaders()), response.read()
