"""The built-in gateway over real HTTP: the registry's ASGI application served by uvicorn on loopback,
real MCP servers behind it (the official SDK, streamable HTTP with sessions and a stateless JSON one), and
the official SDK client in front, connecting to the URL the registry advertises."""

import http.client
import json

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import MCPServer

from servers.models import Server
from tests.core.test_metrics_client import wait_until
from tests.factories import ServerFactory
from tests.gateway.gateway_calls import (  # noqa: F401
    caller_fixture,
    gateway_fixture,
    list_and_call,
    post,
    reported_fixture,
    run,
)
from tests.mcp_servers import (  # noqa: F401
    AUTH_TOKEN,
    SilentServer,
    UvicornThread,
    auth_server_fixture,
    fault_servers_fixture,
    loopback_socket,
    sse_server_fixture,
    time_server_fixture,
    time_tools,
)

pytestmark = pytest.mark.django_db(transaction=True)

ADD_AND_ECHO = {
    "server": "/clock",
    "methods": ["initialize", "tools/list", "tools/call"],
    "tools": ["add", "echo"],
}


@pytest.fixture(scope="module")
def json_server():
    """A stateless MCP server answering plain JSON (no SSE, no sessions)."""
    app = time_tools(MCPServer("Stateless", log_level="WARNING")).streamable_http_app(
        json_response=True, stateless_http=True
    )
    running = UvicornThread(app, loopback_socket()).start()
    yield running.url("/mcp")
    running.stop()


@pytest.mark.parametrize("upstream", ["time_server", "json_server"])
def test_a_client_lists_only_its_tools_and_calls_them_through_the_advertised_url(
    gateway, caller, request, upstream
):
    ServerFactory(path="/clock", proxy_pass_url=request.getfixturevalue(upstream))
    token = caller(ADD_AND_ECHO)

    tools, added, denied = run(gateway.url("/clock/mcp"), token, list_and_call)

    assert tools == ["add", "echo"]
    assert added == "5"
    assert denied == "Access denied: 'gina' may not call tool 'current_time' on server '/clock'."


def test_the_gateway_url_is_the_one_v01_advertises(gateway, caller, time_server, client):
    ServerFactory(path="/clock", proxy_pass_url=time_server)
    token = caller(ADD_AND_ECHO, {"server": "/clock", "methods": ["*"], "tools": ["*"]})
    listing = client.get(
        "/v0.1/servers", HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_HOST=f"127.0.0.1:{gateway.port}"
    ).json()
    url = listing["servers"][0]["server"]["remotes"][0]["url"]

    tools, _, _ = run(url, token, list_and_call)

    assert url == gateway.url("/clock/mcp")
    assert tools == ["add", "current_time", "echo"]


@pytest.mark.parametrize("path", ["/clock/mcp", "/nowhere/mcp"])
def test_without_credentials_it_is_401_with_a_bearer_challenge(gateway, time_server, path):
    ServerFactory(path="/clock", proxy_pass_url=time_server)

    status, headers, body = post(gateway.port, path, {"jsonrpc": "2.0", "id": 1, "method": "ping"})

    assert status == 401  # registered or not: an anonymous client learns nothing
    assert headers["www-authenticate"] == (  # where to get a token for this URL (MCP authorization)
        f'Bearer resource_metadata="http://127.0.0.1:{gateway.port}/.well-known/oauth-protected-resource'
        f'{path}", scope="mcp"'
    )
    assert json.loads(body)["error_code"] == "not_authenticated"


def test_unknown_and_disabled_servers_are_404(gateway, caller, time_server):
    ServerFactory(path="/clock", proxy_pass_url=time_server, is_enabled=False)
    token = {"Authorization": f"Bearer {caller(ADD_AND_ECHO)}"}

    unknown = post(gateway.port, "/nowhere/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, token)
    disabled = post(gateway.port, "/clock/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, token)

    assert (unknown[0], json.loads(unknown[2])["error_code"]) == (404, "not_found")
    assert (disabled[0], json.loads(disabled[2])["error_code"]) == (404, "not_found")


@pytest.mark.parametrize(
    "path",
    [
        "/alpha/../beta/mcp",
        "/alpha/%2e%2e/beta/mcp",
        "/alpha/%2E%2E/beta/mcp",
        "/alpha//beta/mcp",
        "/alpha%2fbeta/mcp",
    ],
)
def test_paths_that_could_name_another_server_are_refused(gateway, caller, time_server, path):
    ServerFactory(path="/alpha", proxy_pass_url=time_server)
    ServerFactory(path="/beta", proxy_pass_url=time_server)
    token = caller({"server": "/alpha", "methods": ["*"], "tools": ["*"]})

    status, _, body = post(
        gateway.port,
        path,
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"Authorization": f"Bearer {token}"},
    )

    assert status == 400
    assert json.loads(body)["error_code"] == "bad_request"


def test_the_longest_registered_prefix_is_the_server(gateway, caller, time_server, fault_servers):
    ServerFactory(path="/team", proxy_pass_url=fault_servers.refused)
    ServerFactory(path="/team/weather", proxy_pass_url=time_server)
    token = caller({"server": "/team/weather", "methods": ["*"], "tools": ["*"]})

    tools, added, _ = run(gateway.url("/team/weather/mcp"), token, list_and_call)

    assert (tools, added) == (["add", "current_time", "echo"], "5")


def test_a_batch_of_denied_calls_is_answered_by_the_gateway_and_nothing_is_forwarded(
    gateway, caller, fault_servers
):
    ServerFactory(path="/clock", proxy_pass_url=fault_servers.refused)  # reaching it would be a 502
    token = caller(ADD_AND_ECHO)
    batch = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "current_time", "arguments": {}},
        },
        {"jsonrpc": "2.0", "id": "b", "method": "resources/list"},
    ]

    status, _, body = post(gateway.port, "/clock/mcp", batch, {"Authorization": f"Bearer {token}"})

    assert status == 200
    answers = json.loads(body)
    assert [(a["id"], a["error"]["code"]) for a in answers] == [(1, -32001), ("b", -32001)]
    assert (
        answers[1]["error"]["message"]
        == "Access denied: 'gina' may not call 'resources/list' on server '/clock'."
    )


def test_unparsable_bodies_get_json_rpc_errors(gateway, caller, time_server):
    ServerFactory(path="/clock", proxy_pass_url=time_server)
    auth = {"Authorization": f"Bearer {caller(ADD_AND_ECHO)}"}

    not_json = post(gateway.port, "/clock/mcp", b"{nope", auth)
    not_rpc = post(gateway.port, "/clock/mcp", [1, 2], auth)

    assert (not_json[0], json.loads(not_json[2])["error"]["code"]) == (400, -32700)
    assert (not_rpc[0], json.loads(not_rpc[2])["error"]["code"]) == (400, -32600)


def test_the_servers_own_headers_replace_the_clients_credentials(gateway, caller, auth_server):
    ServerFactory(
        path="/locked", proxy_pass_url=auth_server, headers={"Authorization": f"Bearer {AUTH_TOKEN}"}
    )
    token = caller({"server": "/locked", "methods": ["*"], "tools": ["*"]})

    tools, added, _ = run(gateway.url("/locked/mcp"), token, list_and_call)

    assert (tools, added) == (["add", "current_time", "echo"], "5")


def test_an_unreachable_server_is_502_and_a_silent_one_504(gateway, caller, fault_servers, settings):
    settings.GATEWAY_TIMEOUT_SECONDS = 1.0
    ServerFactory(path="/down", proxy_pass_url=fault_servers.refused)
    ServerFactory(path="/slow", proxy_pass_url=fault_servers.silent)
    token = caller({"server": "*", "methods": ["*"], "tools": ["*"]})
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}

    down = post(gateway.port, "/down/mcp", ping, {"Authorization": f"Bearer {token}"})
    slow = post(gateway.port, "/slow/mcp", ping, {"Authorization": f"Bearer {token}"})

    assert (down[0], json.loads(down[2])["error_code"]) == (502, "upstream_unavailable")
    assert (slow[0], json.loads(slow[2])["error_code"]) == (504, "upstream_timeout")


def test_other_paths_still_reach_django(gateway, client, admin_user):
    ServerFactory(path="/mcp", name="Named mcp")
    client.force_login(admin_user)
    session = client.cookies["sessionid"].value
    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=10)

    connection.request("GET", "/health")
    health = connection.getresponse()
    health.read()
    connection.request("GET", "/api/edit/mcp", headers={"Cookie": f"sessionid={session}"})
    edit = connection.getresponse()

    assert health.status == 200
    assert edit.status == 200
    assert b"Named mcp" in edit.read()
    assert Server.objects.count() == 1


def test_every_proxied_call_is_reported_with_its_client_and_the_session_steps(
    gateway, caller, time_server, reported
):
    receiver, reporter = reported
    ServerFactory(path="/clock", proxy_pass_url=time_server)
    token = caller(ADD_AND_ECHO)

    def steps() -> list[str]:
        latencies = [m for m in receiver.delivered() if m["type"] == "protocol_latency"]
        return sorted(m["dimensions"]["flow_step"] for m in latencies)

    run(gateway.url("/clock/mcp"), token, list_and_call)
    # A call's metrics are reported once its answer has gone back: the client may already be done.
    wait_until(lambda: len(steps()) >= 3, timeout=30)
    reporter.close(timeout=5)

    executions = [m["dimensions"] for m in receiver.delivered() if m["type"] == "tool_execution"]
    assert [(d["method"], d["tool_name"], d["success"]) for d in executions] == [
        ("initialize", "", True),
        ("tools/list", "", True),
        ("tools/call", "add", True),
    ]
    assert {d["client_name"] for d in executions} == {"mcp"}
    assert all(d["input_size_bytes"] > 0 and d["output_size_bytes"] > 0 for d in executions)
    assert steps() == ["discovery", "full_flow", "selection"]


def test_two_gateway_processes_serve_one_session_alternately(caller, time_server):
    from registry_site.asgi import application

    first = UvicornThread(application, loopback_socket()).start()
    second = UvicornThread(application, loopback_socket()).start()
    ServerFactory(path="/clock", proxy_pass_url=time_server)
    token = caller(ADD_AND_ECHO)
    ports = []

    async def alternate(request):  # every other request goes to the second process
        port = (first.port, second.port)[len(ports) % 2]
        ports.append(port)
        request.url = request.url.copy_with(port=port)

    async def work():
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient(headers=headers, event_hooks={"request": [alternate]}) as http:
            transport = streamable_http_client(first.url("/clock/mcp"), http_client=http)
            async with Client(transport, mode="legacy", cache=None) as client:
                return await list_and_call(client)

    try:
        tools, added, _ = anyio.run(work)
    finally:
        first.stop()
        second.stop()

    assert (tools, added) == (["add", "echo"], "5")
    assert {first.port, second.port} <= set(ports)


def test_a_client_that_leaves_mid_stream_releases_the_upstream_stream(gateway, caller, time_server):
    ServerFactory(path="/clock", proxy_pass_url=time_server)
    token = caller(ADD_AND_ECHO)

    async def open_stream_and_leave():
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
        async with httpx2.AsyncClient(headers=headers, timeout=10) as http:
            init = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "leaver", "version": "1"},
                },
            }
            answer = await http.post(gateway.url("/clock/mcp"), json=init)
            session = {"Mcp-Session-Id": answer.headers["mcp-session-id"]}
            await http.post(
                gateway.url("/clock/mcp"),
                json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                headers=session,
            )
            async with http.stream("GET", gateway.url("/clock/mcp"), headers=session) as stream:
                assert stream.status_code == 200
                assert stream.headers["content-type"].startswith("text/event-stream")
            # left mid-stream: the server allows one GET stream per session (409 for a second), so a new
            # stream opening proves the gateway closed the first one upstream
            reopened = 409
            for _ in range(20):
                async with http.stream("GET", gateway.url("/clock/mcp"), headers=session) as stream:
                    reopened = stream.status_code
                if reopened == 200:
                    break
                await anyio.sleep(0.1)
            assert reopened == 200
            again = await http.post(
                gateway.url("/clock/mcp"),
                json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                headers=session,
            )
            return again.status_code, again.text

    status, text = anyio.run(open_stream_and_leave)

    assert status == 200
    assert '"add"' in text and '"current_time"' not in text


def test_an_sse_server_is_reached_through_its_advertised_sse_url(gateway, caller, sse_server):
    from mcp.client.sse import sse_client

    ServerFactory(path="/clock", proxy_pass_url=sse_server, supported_transports=["sse"])
    token = caller(ADD_AND_ECHO)

    async def work():
        transport = sse_client(
            gateway.url("/clock/sse"), headers={"Authorization": f"Bearer {token}"}, timeout=20
        )
        async with Client(transport, mode="legacy", cache=None) as client:
            return await list_and_call(client)

    tools, added, denied = anyio.run(work)

    assert tools == ["add", "echo"]
    assert added == "5"
    assert "not found" in denied.lower()  # the stand-in's answer on the stream; current_time never ran


def test_a_message_for_an_unknown_sse_session_is_404(gateway, caller, sse_server):
    ServerFactory(path="/clock", proxy_pass_url=sse_server, supported_transports=["sse"])
    token = caller(ADD_AND_ECHO)

    status, _, body = post(
        gateway.port,
        "/clock/messages/?session_id=0123456789abcdef0123456789abcdef",
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"Authorization": f"Bearer {token}"},
    )

    assert (status, json.loads(body)["error_code"]) == (404, "not_found")


def test_a_reported_call_carries_its_error_type_and_its_upstream_time(gateway, caller, time_server, reported):
    receiver, reporter = reported
    ServerFactory(path="/clock", proxy_pass_url=time_server)
    token = caller(ADD_AND_ECHO)

    async def work(client):
        await client.call_tool("add", {"a": 1, "b": 2})
        return (await client.call_tool("add", {"a": "not a number"})).is_error

    assert run(gateway.url("/clock/mcp"), token, work) is True
    wait_until(
        lambda: len([m for m in receiver.delivered() if m["type"] == "tool_execution"]) >= 4, timeout=30
    )
    reporter.close(timeout=5)

    calls = [
        m
        for m in receiver.delivered()
        if m["type"] == "tool_execution" and m["dimensions"]["method"] == "tools/call"
    ]
    assert [m["dimensions"]["error_type"] for m in calls] == [None, "tool_error"]
    assert all(0 < m["dimensions"]["upstream_ms"] <= m["duration_ms"] for m in calls)
