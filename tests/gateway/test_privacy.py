"""Callers cannot see or touch each other's traffic through the gateway, and cannot starve each other: every
stream filtered (resumptions and any SSE line ending included), sessions bound to the caller that opened
them, method names judged exactly, answers that need no rewriting streamed as they come, fair shares."""

import http.client
import json
import threading
import time

import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from gateway import fair_share
from tests.factories import ServerFactory
from tests.gateway.gateway_calls import (  # noqa: F401
    INITIALIZE,
    LIST,
    TOOLS,
    bearer,
    caller_fixture,
    gateway_fixture,
    open_session,
    post,
    read_events,
    sse_messages,
    stream,
)
from tests.mcp_servers import (  # noqa: F401
    UvicornThread,
    loopback_socket,
    resumable_server_fixture,
    sse_server_fixture,
    time_server_fixture,
)

pytestmark = pytest.mark.django_db(transaction=True)

ADD_ONLY = {"server": "/clock", "methods": ["initialize", "tools/list", "tools/call"], "tools": ["add"]}
EVERYTHING = {"server": "/clock", "methods": ["*"], "tools": ["*"]}
# -- every stream is filtered ------------------------------------------------------------------------


def test_a_resumed_stream_replays_tool_lists_cut_to_the_callers_tools(gateway, caller, resumable_server):
    ServerFactory(path="/clock", proxy_pass_url=resumable_server)
    token = caller(ADD_ONLY)
    session = open_session(gateway.port, token)
    status, _, body = post(gateway.port, "/clock/mcp", LIST, bearer(token, **{"Mcp-Session-Id": session}))
    first = body.replace(b"\r\n", b"\n").split(b"\n")
    event_ids = [line[3:].strip().decode() for line in first if line.startswith(b"id:")]

    connection, resumed = stream(gateway.port, token, session, **{"Last-Event-ID": event_ids[0]})
    replayed = read_events(resumed, 1)
    connection.close()

    assert status == 200
    assert [tool["name"] for tool in sse_messages(body)[0]["result"]["tools"]] == ["add"]
    assert resumed.status == 200
    assert [tool["name"] for tool in replayed[0]["result"]["tools"]] == ["add"]


def scripted_app(release: threading.Event):
    """A fake MCP server whose answers are written out byte by byte, for what the SDK never sends."""

    async def events(request):
        ending = {"cr": b"\r", "lf": b"\n", "crlf": b"\r\n"}[request.path_params["ending"]]
        data = json.dumps({"jsonrpc": "2.0", "id": 2, "result": {"tools": TOOLS}}).encode()
        body = b"event: message" + ending + b"data: " + data + ending + ending

        async def chunks():  # split so a line ending falls between two chunks
            yield body[: len(body) - 1]
            yield body[len(body) - 1 :]

        return StreamingResponse(chunks(), media_type="text/event-stream")

    async def slow_json(request):
        async def chunks():
            yield b'{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"'
            for _ in range(1000):  # until the client has seen the first bytes
                if release.is_set():
                    break
                await __import__("asyncio").sleep(0.01)
            yield b"x" * 100_000 + b'"}]}}'

        return StreamingResponse(chunks(), media_type="application/json")

    async def big_list(request):
        tools = [{"name": f"tool_{i}", "inputSchema": {"type": "object"}} for i in range(2000)]
        return JSONResponse({"jsonrpc": "2.0", "id": 2, "result": {"tools": tools}})

    async def deep(request):
        nested = "[" * 100_000 + "]" * 100_000
        data = ('{"jsonrpc":"2.0","id":2,"result":{"tools":[' + nested + "]}}").encode()
        if request.path_params["kind"] == "json":
            return Response(data, media_type="application/json")
        return Response(b"event: message\ndata: " + data + b"\n\n", media_type="text/event-stream")

    async def echo_method(request):
        body = await request.json()
        return JSONResponse({"jsonrpc": "2.0", "id": body.get("id"), "result": {"reached": True}})

    return Starlette(
        routes=[
            Route("/events/{ending}", events, methods=["POST", "GET"]),
            Route("/slow-json", slow_json, methods=["POST"]),
            Route("/big-list", big_list, methods=["POST"]),
            Route("/reached", echo_method, methods=["POST"]),
            Route("/deep/{kind}", deep, methods=["POST"]),
        ]
    )


@pytest.fixture(name="scripted")
def scripted_fixture():
    release = threading.Event()
    running = UvicornThread(scripted_app(release), loopback_socket()).start()
    running.release = release
    yield running
    running.stop()


@pytest.mark.parametrize("ending", ["cr", "lf", "crlf"])
def test_tool_lists_are_cut_whatever_line_endings_the_stream_uses(gateway, caller, scripted, ending):
    ServerFactory(path="/clock", proxy_pass_url=scripted.url(f"/events/{ending}"))
    token = caller(ADD_ONLY)

    status, _, body = post(gateway.port, "/clock/mcp", LIST, bearer(token))
    connection, streamed = stream(gateway.port, token, None)
    on_get = read_events(streamed, 1)
    connection.close()

    assert status == 200
    assert [[tool["name"] for tool in m["result"]["tools"]] for m in sse_messages(body)] == [["add"]]
    assert [[tool["name"] for tool in m["result"]["tools"]] for m in on_get] == [["add"]]


# -- sessions belong to their caller -----------------------------------------------------------------


def test_another_caller_cannot_post_into_read_resume_or_end_a_session(gateway, caller, resumable_server):
    ServerFactory(path="/clock", proxy_pass_url=resumable_server)
    owner = caller(EVERYTHING, name="olga")
    other = caller(EVERYTHING, name="mallory")
    session = open_session(gateway.port, owner)
    theirs = bearer(other, **{"Mcp-Session-Id": session})

    posted = post(gateway.port, "/clock/mcp", LIST, theirs)
    connection, read = stream(gateway.port, other, session)
    connection.close()
    connection, resumed = stream(gateway.port, other, session, **{"Last-Event-ID": "1"})
    connection.close()
    ended = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=10)
    ended.request("DELETE", "/clock/mcp", headers=theirs)
    deleted = ended.getresponse()
    still = post(gateway.port, "/clock/mcp", LIST, bearer(owner, **{"Mcp-Session-Id": session}))

    assert (posted[0], read.status, resumed.status, deleted.status) == (404, 404, 404, 404)
    assert json.loads(posted[2])["error"]["message"] == "Session not found"
    assert still[0] == 200
    assert [tool["name"] for tool in sse_messages(still[2])[0]["result"]["tools"]] == [
        "current_time",
        "add",
        "echo",
    ]


def test_a_session_the_gateway_never_saw_opened_is_404(gateway, caller, resumable_server):
    ServerFactory(path="/clock", proxy_pass_url=resumable_server)
    token = caller(EVERYTHING)

    status, _, body = post(gateway.port, "/clock/mcp", LIST, bearer(token, **{"Mcp-Session-Id": "guessed"}))

    assert (status, json.loads(body)["error"]["message"]) == (404, "Session not found")


def test_another_caller_cannot_post_into_an_sse_transport_session(gateway, caller, sse_server):
    ServerFactory(path="/clock", proxy_pass_url=sse_server, supported_transports=["sse"])
    owner = caller(EVERYTHING, name="olga")
    other = caller(EVERYTHING, name="mallory")
    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=10)
    connection.request("GET", "/clock/sse", headers={"Accept": "text/event-stream", **bearer(owner)})
    opened = connection.getresponse()
    opened.fp.raw._sock.settimeout(10)
    endpoint = b""
    while not endpoint.startswith(b"data:"):
        endpoint = opened.fp.readline().strip()
    messages_url = endpoint[5:].strip().decode()

    status, _, _ = post(gateway.port, messages_url, INITIALIZE, bearer(other))
    own, _, _ = post(gateway.port, messages_url, INITIALIZE, bearer(owner))
    connection.close()

    assert messages_url.startswith("/clock/messages/?session_id=")
    assert (status, own) == (404, 202)


# -- method names are judged exactly -----------------------------------------------------------------


@pytest.mark.parametrize(
    "message, code",
    [
        ({"method": "Tools/Call", "params": {"name": "current_time"}}, -32001),
        ({"method": "tools/call ", "params": {"name": "current_time"}}, -32001),
        ({"method": "TOOLS/CALL", "params": {"name": "add"}}, -32001),
        ({"Method": "tools/call", "params": {"name": "current_time"}}, -32600),
        ({"params": {"name": "current_time"}}, -32600),
        ({"method": "tools/call", "params": {}}, -32600),
    ],
)
def test_a_method_not_exactly_known_is_refused_unless_granted(gateway, caller, scripted, message, code):
    ServerFactory(path="/clock", proxy_pass_url=scripted.url("/reached"))
    token = caller({"server": "/clock", "methods": ["*"], "tools": ["add"]})

    status, _, body = post(gateway.port, "/clock/mcp", {"jsonrpc": "2.0", "id": 9, **message}, bearer(token))

    assert status == 200
    answer = json.loads(body)
    assert (answer["id"], answer["error"]["code"]) == (9, code)


def test_an_other_method_named_by_a_rule_is_forwarded(gateway, caller, scripted):
    ServerFactory(path="/clock", proxy_pass_url=scripted.url("/reached"))
    token = caller({"server": "/clock", "methods": ["acme/report"], "tools": []})

    status, _, body = post(
        gateway.port, "/clock/mcp", {"jsonrpc": "2.0", "id": 9, "method": "acme/report"}, bearer(token)
    )

    assert (status, json.loads(body)) == (200, {"jsonrpc": "2.0", "id": 9, "result": {"reached": True}})


# -- answers are streamed, what must be rewritten is bounded -----------------------------------------


def test_an_answer_that_needs_no_rewriting_reaches_the_client_before_the_server_has_finished(
    gateway, caller, scripted
):
    ServerFactory(path="/clock", proxy_pass_url=scripted.url("/slow-json"))
    token = caller(EVERYTHING)
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "big"}}
    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=5)
    connection.request(
        "POST", "/clock/mcp", json.dumps(call), {"Content-Type": "application/json", **bearer(token)}
    )

    try:
        response = connection.getresponse()  # the server is still holding the rest back
        first = response.read1(64)
    except TimeoutError:
        pytest.fail("the gateway held the answer back until the server had finished it")
    finally:
        scripted.release.set()
    rest = response.read()

    assert response.status == 200
    assert first.startswith(b'{"jsonrpc":"2.0","id":3')
    assert json.loads(first + rest)["result"]["content"][0]["text"] == "x" * 100_000


def test_a_tool_list_larger_than_the_rewrite_bound_is_a_json_rpc_error(gateway, caller, scripted, settings):
    settings.GATEWAY_MAX_REWRITE_BYTES = 10_000
    ServerFactory(path="/clock", proxy_pass_url=scripted.url("/big-list"))
    token = caller(ADD_ONLY)

    status, _, body = post(gateway.port, "/clock/mcp", LIST, bearer(token))

    assert status == 200
    assert json.loads(body) == {
        "jsonrpc": "2.0",
        "id": 2,
        "error": {
            "code": -32603,
            "message": "The server's answer is larger than the gateway's limit of 10000 bytes "
            "for answers it filters.",
        },
    }


@pytest.mark.parametrize("kind", ["json", "sse"])
def test_a_tool_list_too_deep_to_read_is_an_error_never_passed_on_unread(gateway, caller, scripted, kind):
    ServerFactory(path="/clock", proxy_pass_url=scripted.url(f"/deep/{kind}"))
    token = caller(ADD_ONLY)

    status, _, body = post(gateway.port, "/clock/mcp", LIST, bearer(token))

    assert status == 200
    answer = json.loads(body) if kind == "json" else sse_messages(body)[0]
    assert answer["id"] == 2 and answer["error"]["code"] == -32603
    assert "could not be read to filter it" in answer["error"]["message"]
    assert b"[[[[" not in body


# -- fair shares ---------------------------------------------------------------------------------------


def test_a_caller_over_its_share_of_streams_gets_429_and_others_are_not_delayed(
    gateway, caller, resumable_server, time_server, settings
):
    settings.GATEWAY_MAX_STREAMS_PER_CALLER = 3
    ServerFactory(path="/clock", proxy_pass_url=resumable_server)
    ServerFactory(path="/other", proxy_pass_url=time_server)
    hog = caller(EVERYTHING, name="hog")
    other = caller({"server": "/other", "methods": ["*"], "tools": ["*"]}, name="olga")
    sessions = [open_session(gateway.port, hog) for _ in range(4)]
    held = [stream(gateway.port, hog, session) for session in sessions[:3]]

    over = stream(gateway.port, hog, sessions[3])
    refused = json.loads(over[1].read())
    started = time.monotonic()
    status, headers, _ = post(gateway.port, "/other/mcp", INITIALIZE, bearer(other))
    waited = time.monotonic() - started
    for connection, _ in [*held, over]:
        connection.close()

    assert [response.status for _, response in held] == [200, 200, 200]
    assert over[1].status == 429
    assert over[1].getheader("Retry-After") == "1"
    assert refused["error_code"] == "throttled"
    assert status == 200 and "mcp-session-id" in headers
    assert waited < 2
    deadline = time.monotonic() + 5
    while fair_share.held() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fair_share.held() == {}


# -- Host and Origin -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers, status",
    [
        ({"Host": "evil.example.com"}, 403),
        ({"Origin": "http://evil.example.com"}, 403),
        ({"Origin": "null"}, 403),
        ({"Origin": "http://localhost:3000"}, 200),
        ({}, 200),
    ],
)
def test_hosts_and_origins_the_registry_does_not_serve_are_refused(
    gateway, caller, time_server, headers, status
):
    ServerFactory(path="/clock", proxy_pass_url=time_server)
    token = caller(EVERYTHING)

    answered, _, body = post(gateway.port, "/clock/mcp", INITIALIZE, bearer(token, **headers))

    assert answered == status
    if status == 403:
        assert json.loads(body)["error_code"] == "permission_denied"


def test_an_origin_allowed_by_the_setting_is_served(gateway, caller, time_server, settings):
    settings.CORS_ALLOWED_ORIGINS = ["https://vscode.dev"]
    ServerFactory(path="/clock", proxy_pass_url=time_server)
    token = caller(EVERYTHING)

    answered, _, _ = post(gateway.port, "/clock/mcp", INITIALIZE, bearer(token, Origin="https://vscode.dev"))

    assert answered == 200
