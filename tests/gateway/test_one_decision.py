"""One decision for every target kind (gateway/decision.py): the same tests, run for a server, a virtual
server and an A2A agent through the real gateway, each answered in its own protocol. A token bound to
another resource is 401 with a challenge; a quarantined caller or target is 403 with the operator's
reason; a method the rules do not grant is refused before the upstream sees it; a call over a limit is
429 with Retry-After and the kind's error (-32023); the caller's credential never reaches the upstream,
which gets the registry's own for it (connections/resolver.py); an upstream event that never ends is cut
at the gateway's limit, the upstream hung up on and the client told."""

import asyncio
import json
import time
from urllib.parse import parse_qs

import httpx
import pytest
from mcp.server import MCPServer
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route as StarletteRoute

from accounts.models import User
from agents.models import Agent
from connections.choices import Purpose
from connections.models import UpstreamCredential, of_target
from connections.sealed import seal_for
from limits.services import limit_set, quarantine_set
from servers.models import Server
from tests.a2a_agents import echo_agent
from tests.factories import AgentFactory, ServerFactory, ToolFactory
from tests.gateway.gateway_calls import INITIALIZE, bearer, caller_fixture, gateway_fixture, post  # noqa: F401
from tests.mcp_servers import (  # noqa: F401
    RequiresHeader,
    UvicornThread,
    loopback_socket,
    recorded_time_server,
    time_server_fixture,
    time_tools,
)
from tests.oauth.conftest import Host, olga  # noqa: F401
from virtual_servers.services import virtual_server_create

pytestmark = pytest.mark.django_db(transaction=True)

KINDS = ("server", "virtual_server", "agent")
PATHS = {"server": "/clock", "virtual_server": "/team", "agent": "/echo"}
V1 = {"A2A-Version": "1.0"}


def register_targets(mcp_url: str, agent_url: str):
    """The three kinds at PATHS: the server `/clock` at `mcp_url` (offering `add`), the virtual server
    `/team` of it, the agent `/echo` at `agent_url`. (the server, the agent)"""
    clock = ServerFactory(path="/clock", name="Clock", proxy_pass_url=mcp_url)
    ToolFactory(server=clock, name="add")
    virtual_server_create(
        actor=None, path="/team", definition={"name": "Team", "members": [{"server": "/clock"}]}
    )
    agent = AgentFactory(
        path="/echo",
        url=agent_url,
        preferred_transport="JSONRPC",
        protocol_version="1.0",
        interfaces=[{"url": agent_url, "protocol_binding": "JSONRPC", "protocol_version": "1.0"}],
        visibility="public",
        is_enabled=True,
    )
    return clock, agent


@pytest.fixture
def targets(time_server):
    agent = echo_agent()
    clock, _ = register_targets(time_server, agent.url("/"))
    ServerFactory(path="/beta", name="Beta", proxy_pass_url=time_server)
    for name in ("echo", "current_time"):
        ToolFactory(server=clock, name=name)
    yield
    agent.stop()


def call(port: int, kind: str, headers: dict) -> tuple[int, dict, dict]:
    """(HTTP status, headers, the JSON answer) of one call to the target of `kind`: a tools/call in a
    session (MCP), a SendMessage (A2A)."""
    status, answer_headers, body = call_raw(port, kind, headers)
    text = body.decode()
    if text.startswith("event:") or text.startswith("data:"):
        text = next(line[6:] for line in text.splitlines() if line.startswith("data: "))
    return status, answer_headers, json.loads(text)


def call_raw(port: int, kind: str, headers: dict) -> tuple[int, dict, bytes]:
    """(HTTP status, headers, the body as it came) of `call`."""
    path = PATHS[kind]
    if kind == "agent":
        message = {
            "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
        }
        request = {"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": message}
        status, answer_headers, body = post(port, f"{path}/a2a", request, {**headers, **V1})
        return status, {k.lower(): v for k, v in answer_headers.items()}, body
    status, opened, body = post(port, f"{path}/mcp", INITIALIZE, headers)
    if status != 200:
        return status, {k.lower(): v for k, v in opened.items()}, body
    session = {"Mcp-Session-Id": opened["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
    request = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
    }
    status, answer_headers, body = post(port, f"{path}/mcp", request, {**headers, **session})
    return status, {k.lower(): v for k, v in answer_headers.items()}, body


def rules(kind: str, methods) -> list[dict]:
    """A scope's rules for the target; behind a virtual server, its member's too (a virtual server grants
    no more than its members do)."""
    granted = [{"server": PATHS[kind], "methods": methods, "tools": ["*"]}]
    if kind == "virtual_server":
        granted.append({"server": "/clock", "methods": ["*"], "tools": ["*"]})
    return granted


@pytest.mark.parametrize("kind", KINDS)
def test_a_token_bound_to_another_resource_is_401_with_a_challenge(gateway, targets, olga, kind):  # noqa: F811
    scope = Host(gateway.url("")).tokens(gateway.url("/beta/mcp"))

    status, headers, answer = call(gateway.port, kind, bearer(scope["access_token"]))

    assert (status, answer["error_code"]) == (401, "token_audience")
    assert 'error="invalid_token"' in headers["www-authenticate"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("quarantined", ["caller", "target"])
def test_a_quarantined_caller_or_target_is_403_with_the_reason(gateway, targets, caller, kind, quarantined):
    token = caller(*rules(kind, ["*"]), name="gina")
    if quarantined == "caller":
        quarantine_set(actor=None, kind="user", name="gina", reason="under review")
    else:
        quarantine_set(actor=None, kind=kind, name=PATHS[kind], reason="under review")

    status, _, answer = call(gateway.port, kind, bearer(token))

    assert (status, answer["error_code"]) == (403, "permission_denied")
    assert answer["detail"] == "Quarantined by an operator: under review"


@pytest.mark.parametrize("kind", KINDS)
def test_a_method_the_rules_do_not_grant_is_refused_in_the_kinds_shape(gateway, targets, caller, kind):
    granted = ["initialize", "tools/list"] if kind != "agent" else ["GetTask"]
    token = caller(*rules(kind, granted))

    status, _, answer = call(gateway.port, kind, bearer(token))

    assert status == 200
    assert answer["error"]["code"] == (-32050 if kind == "agent" else -32001)
    assert answer["error"]["message"].startswith("Access denied: 'gina' may not call ")


@pytest.mark.parametrize("kind", KINDS)
def test_the_callers_credential_never_reaches_the_upstream_which_gets_the_registrys(gateway, caller, kind):
    from agents.services import agent_update
    from servers.services.registry import server_update

    server, server_seen = recorded_time_server()
    agent = echo_agent(requires=("X-Upstream-Key", "the-registrys-key"))
    try:
        clock, echo = register_targets(server.url("/mcp"), agent.url("/"))
        server_update(actor=None, server=clock, headers={"X-Upstream-Key": "the-registrys-key"})
        agent_update(actor=None, agent=echo, headers={"X-Upstream-Key": "the-registrys-key"})
        token = caller(*rules(kind, ["*"]))

        status, _, answer = call(gateway.port, kind, bearer(token))
        seen = agent.guard.seen if kind == "agent" else server_seen.seen
    finally:
        server.stop()
        agent.stop()

    assert status == 200 and "error" not in answer, answer
    assert seen and all(headers.get(b"x-upstream-key") == b"the-registrys-key" for headers in seen)
    assert not any(b"authorization" in headers or b"cookie" in headers for headers in seen)
    assert not any(token.encode() in b"".join(headers.values()) for headers in seen)


@pytest.mark.parametrize("kind", KINDS)
def test_a_call_over_a_limit_is_429_with_retry_after_and_the_kinds_error(gateway, targets, caller, kind):
    token = caller(*rules(kind, ["*"]))
    limit_set(
        actor=None,
        caller_kind="user",
        caller="gina",
        target_kind=kind,
        target=PATHS[kind],
        windows=[{"per": "minute", "limit": 1}],
    )

    first = call(gateway.port, kind, bearer(token))
    status, headers, answer = call(gateway.port, kind, bearer(token))

    assert first[0] == 200 and "error" not in first[2], first
    assert status == 429
    assert int(headers["retry-after"]) >= 1
    assert headers["ratelimit-policy"].endswith(";q=1;w=60")
    assert answer["error"]["code"] == -32023
    assert answer["error"]["data"]["retryAfterMs"] > 0


class TokenEndpoint:
    """An upstream authorization server's token endpoint on loopback: each refresh-token grant it is sent
    is noted (`grants`); it issues `fresh` for the refresh token `r1`, and refuses any other (RFC 6749
    `invalid_grant`)."""

    def __init__(self):
        self.grants: list[dict] = []
        self.running = UvicornThread(
            Starlette(routes=[StarletteRoute("/token", self.token, methods=["POST"])]), loopback_socket()
        ).start()
        self.url = self.running.url("/token")

    async def token(self, request):
        grant = {key: values[0] for key, values in parse_qs((await request.body()).decode()).items()}
        self.grants.append(grant)
        if grant.get("grant_type") != "refresh_token" or grant.get("refresh_token") != "r1":
            return JSONResponse({"error": "invalid_grant", "error_description": "refresh token revoked"}, 400)
        return JSONResponse({"access_token": "fresh", "token_type": "Bearer", "expires_in": 3600})


def signed_in(target, username: str, token_endpoint: str, refresh_token: str) -> None:
    """`username`'s sign-in to `target` as a completed sign-in leaves it (sealed): the access token
    `stale` and `refresh_token` of `token_endpoint`."""
    values = {
        "client_id": "registry",
        "client_secret": "",
        "token_endpoint": token_endpoint,
        "revocation_endpoint": "",
        "issuer": token_endpoint.removesuffix("/token"),
        "resource": target.upstream_url,
        "access_token": "stale",
        "refresh_token": refresh_token,
    }
    user = User.objects.get(username=username)
    sealed, mode, origin = seal_for(target=target, user_id=user.pk, purpose=Purpose.USER, values=values)
    UpstreamCredential.objects.create(
        **of_target(target), user=user, purpose=Purpose.USER, sealed=sealed, mode=mode, origin=origin
    )


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("refresh", ["granted", "refused"])
def test_an_upstream_401_for_a_sign_in_is_refreshed_once_and_tried_again_then_asked(
    gateway, caller, settings, kind, refresh
):
    settings.UPSTREAM_OAUTH_ALLOW_LOOPBACK = True
    issuer = TokenEndpoint()
    accepts = ("authorization", "Bearer fresh")
    guard = RequiresHeader(
        time_tools(MCPServer("Signed in", log_level="WARNING")).streamable_http_app(), *accepts
    )
    server = UvicornThread(guard, loopback_socket()).start()
    agent = echo_agent(requires=accepts)
    try:
        clock, echo = register_targets(server.url("/mcp"), agent.url("/"))
        Server.objects.filter(pk=clock.pk).update(upstream_auth="user_oauth")
        Agent.objects.filter(pk=echo.pk).update(upstream_auth="user_oauth")
        token = caller(*rules(kind, ["*"]))
        target = Agent.objects.get(pk=echo.pk) if kind == "agent" else Server.objects.get(pk=clock.pk)
        signed_in(target, "gina", issuer.url, "r1" if refresh == "granted" else "revoked")

        status, _, body = call_raw(gateway.port, kind, bearer(token))
        seen = agent.guard.seen if kind == "agent" else guard.seen
    finally:
        server.stop()
        agent.stop()
        issuer.running.stop()

    tried = [headers.get(b"authorization") for headers in seen]
    assert [grant["refresh_token"] for grant in issuer.grants] == [
        "r1" if refresh == "granted" else "revoked"
    ]
    assert tried.count(b"Bearer stale") == 1  # refused once, then never sent again
    if refresh == "granted":
        assert status == 200 and b'"error"' not in body, body
        assert tried[0] == b"Bearer stale" and set(tried[1:]) == {b"Bearer fresh"}
    else:
        assert tried == [b"Bearer stale"]
        assert b"/connections/" in body
        assert not UpstreamCredential.objects.filter(user__username="gina").exists()


class EndlessEvent:
    """A hostile upstream, MCP or A2A: it opens sessions and lists `add` as a server does, and answers a
    call (`tools/call`, `SendMessage`) with an event stream whose first event never ends (64 KiB chunks, no
    newline), until the gateway hangs up or 100 MiB have gone."""

    LIMIT = 100 * 1024 * 1024

    def __init__(self, hold: bool = False):
        self.sent = 0
        self.hung_up = False
        self.hold = hold  # instead: one whole event, then the stream held open until the client leaves

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = json.loads(body) if body else {}
        method = request.get("method")
        if method in ("tools/call", "SendMessage"):
            return await self._endless(receive, send, request["id"], method)
        if method == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": [{"name": "add", "inputSchema": {"type": "object"}}]}
        elif "id" not in request:
            return await self._answer(send, 202, b"")
        else:
            result = {}
        answer = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()
        await self._answer(send, 200, answer)

    async def _answer(self, send, status: int, body: bytes):
        headers = [(b"content-type", b"application/json"), (b"mcp-session-id", b"hostile-session")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _endless(self, receive, send, request_id, method: str):
        start = [(b"content-type", b"text/event-stream"), (b"mcp-session-id", b"hostile-session")]
        await send({"type": "http.response.start", "status": 200, "headers": start})

        async def watch():
            while (await receive())["type"] != "http.disconnect":
                pass
            self.hung_up = True

        if self.hold:
            working = {"taskId": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}
            progress = {"method": "notifications/progress", "params": {"progressToken": 1, "progress": 0}}
            event = (
                {"id": request_id, "result": {"statusUpdate": working}}
                if method == "SendMessage"
                else progress
            )
            data = json.dumps({"jsonrpc": "2.0", **event}).encode()
            await send({"type": "http.response.body", "body": b"data: " + data + b"\n\n", "more_body": True})
            return await watch()
        watcher = asyncio.create_task(watch())
        head = b'data: {"jsonrpc":"2.0","id":' + json.dumps(request_id).encode() + b',"result":{"text":"'
        await send({"type": "http.response.body", "body": head, "more_body": True})
        chunk = b"x" * 65536
        while self.sent < self.LIMIT and not self.hung_up:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            self.sent += len(chunk)
            await asyncio.sleep(0.001)
        watcher.cancel()
        await send({"type": "http.response.body", "body": b""})


@pytest.mark.parametrize("kind", KINDS)
def test_an_upstream_event_that_never_ends_is_cut_at_the_limit_and_the_client_told(
    gateway, caller, settings, kind
):
    settings.GATEWAY_MAX_REWRITE_BYTES = 1024 * 1024
    hostile = EndlessEvent()
    running = UvicornThread(hostile, loopback_socket()).start()
    try:
        register_targets(running.url("/mcp"), running.url("/"))
        token = caller(*rules(kind, ["*"]))

        status, _, raw = call_raw(gateway.port, kind, bearer(token))
        deadline = time.monotonic() + 10
        while not hostile.hung_up and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        running.stop()

    last = json.loads([line for line in raw.splitlines() if line.startswith(b"data: ")][-1][6:])
    assert status == 200
    assert last["id"] == 2
    assert last["error"]["code"] == -32603
    assert "1048576 bytes" in last["error"]["message"]
    assert hostile.hung_up and hostile.sent < 8 * 1024 * 1024  # hung up on soon after the limit


@pytest.mark.parametrize("kind", KINDS)
def test_the_fair_share_holds_a_caller_over_its_share_gets_429_and_another_is_served(
    gateway, caller, settings, kind
):
    from gateway import fair_share

    settings.GATEWAY_MAX_STREAMS_PER_CALLER = 1
    hostile = EndlessEvent(hold=True)  # an answer that takes its time
    running = UvicornThread(hostile, loopback_socket()).start()
    try:
        register_targets(running.url("/mcp"), running.url("/"))
        hog, other = caller(*rules(kind, ["*"]), name="hog"), caller(*rules(kind, ["*"]), name="olga")
        url, request, extra = held_call(gateway.port, kind, bearer(hog))
        with httpx.stream("POST", gateway.url(url), json=request, headers=extra, timeout=20) as held:
            chunks = held.iter_bytes()  # kept: an abandoned iterator closes the stream
            assert next(chunks)
            over = call_raw(gateway.port, kind, bearer(hog))
            served = opened(gateway.port, kind, bearer(other))
        deadline = time.monotonic() + 5
        while fair_share.held() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        running.stop()

    assert over[0] == 429
    assert over[1]["retry-after"] == "1"
    assert json.loads(over[2])["error"]["code"] == -32023
    assert json.loads(over[2])["error"]["message"].startswith("You have 1 exchanges open")
    assert served == 200
    assert fair_share.held() == {}


def held_call(port: int, kind: str, headers: dict) -> tuple[str, dict, dict]:
    """(path, body, headers) of a call whose answer streams: a SendMessage (A2A), a tools/call in a session
    opened here (MCP)."""
    stream_headers = {**headers, "Accept": "application/json, text/event-stream"}
    if kind == "agent":
        message = {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}
        return (
            "/echo/a2a",
            {"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": message},
            {
                **stream_headers,
                **V1,
            },
        )
    path = f"{PATHS[kind]}/mcp"
    _, opened_headers, _ = post(port, path, INITIALIZE, headers)
    session = {"Mcp-Session-Id": opened_headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
    request = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add", "arguments": {}}}
    return path, request, {**stream_headers, **session}


def opened(port: int, kind: str, headers: dict) -> int:
    """The status of another caller's first request (an initialize, an A2A task read)."""
    if kind == "agent":
        request = {"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": "none"}}
        return post(port, "/echo/a2a", request, {**headers, **V1})[0]
    return post(port, f"{PATHS[kind]}/mcp", INITIALIZE, headers)[0]
