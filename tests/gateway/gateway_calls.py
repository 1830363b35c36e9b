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


@pytest.fixture(name="reported")
def reported_fixture(settings):
    """Metrics the registry reports, received by a real loopback metrics endpoint."""
    from core.metrics_client import reset_client
    from tests.core.test_metrics_client import Receiver, client_for

    receiver = Receiver()
    reporter = client_for(settings, receiver.url)
    yield receiver, reporter
    reporter.close(timeout=5)
    receiver.stop()
    reset_client()


@pytest.fixture(name="caller")
def caller_fixture(member, scope_factory, token_for):
    """A token for a user granted `rules` (server rules) and nothing else."""

    def make(*rules, name="gina"):
        scope_factory(f"{name}-scope", group=f"{name}-group", server_rules=list(rules))
        return token_for(member(name, f"{name}-group"))

    return make


async def _session(url: str, token: str | None, work, mode: str, extra: dict | None, options: dict):
    headers = {**(extra or {}), **({"Authorization": f"Bearer {token}"} if token else {})}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(20)) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, cache=None, **options) as client:
            return await work(client)


async def _sse_session(url: str, token: str, work, options: dict):
    from mcp.client.sse import sse_client

    transport = sse_client(url, headers={"Authorization": f"Bearer {token}"}, timeout=20)
    async with Client(transport, mode="legacy", cache=None, **options) as client:
        return await work(client)


def run_sse(url: str, token: str, work, **options):
    """`work(client)` in a session of the official SDK client over the SSE transport (`url`: the stream)."""
    return anyio.run(_sse_session, url, token, work, options)


def run(url: str, token: str | None, work, mode: str = "legacy", headers: dict | None = None, **options):
    """`work(client)` in a session of the official SDK client: `legacy` (the initialize handshake),
    `auto` (2026-07-28 when the server speaks it) or a 2026-07-28 version pin; `headers` go with every
    request; `options` are the client's (callbacks)."""
    return anyio.run(_session, url, token, work, mode, headers, options)


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


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
TOOLS = [{"name": name, "inputSchema": {"type": "object"}} for name in ("add", "current_time", "echo")]


def bearer(token: str, **headers) -> dict:
    """Headers of a 2025-11-25 client with a registry token."""
    return {"Authorization": f"Bearer {token}", "MCP-Protocol-Version": "2025-11-25", **headers}


def open_session(port: int, token: str, path: str = "/clock/mcp") -> str:
    """A session opened through the gateway (initialize, then initialized); its id."""
    status, headers, _ = post(port, path, INITIALIZE, bearer(token))
    assert status == 200
    session = headers["mcp-session-id"]
    assert post(port, path, INITIALIZED, bearer(token, **{"Mcp-Session-Id": session}))[0] == 202
    return session


def sse_messages(body: bytes) -> list[dict]:
    """The JSON messages of an event-stream body, whatever its line endings."""
    events = body.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n\n")
    found = []
    for event in events:
        data = b"\n".join(line[5:].strip() for line in event.split(b"\n") if line.startswith(b"data:"))
        if data:
            found.append(json.loads(data))
    return found


def read_events(response: http.client.HTTPResponse, wanted: int, seconds: float = 10) -> list[dict]:
    """The first `wanted` JSON messages of an open event stream."""
    response.fp.raw._sock.settimeout(seconds)
    body = b""
    while len(sse_messages(body)) < wanted:
        line = response.fp.readline()
        if not line:
            break
        body += line
    return sse_messages(body)


def stream(
    port: int, token: str, session: str | None, path: str = "/clock/mcp", **headers
) -> tuple[http.client.HTTPConnection, object]:
    """A GET stream opened (its connection and response, still open)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    sent = {"Accept": "text/event-stream", **bearer(token, **headers)}
    if session:
        sent["Mcp-Session-Id"] = session
    connection.request("GET", path, headers=sent)
    return connection, connection.getresponse()
