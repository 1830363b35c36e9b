"""nginx in front, for real: Debian's nginx with the configuration `manage.py nginx_config` writes, the
registry's ASGI application behind it on loopback, real MCP servers (the official SDK) and the official SDK
client connecting to nginx. A call nginx carries to the server arrives with the identity headers and
without the client's credentials, which is how these tests tell it from one the registry served itself."""

import json

import pytest
from django.core.management import call_command
from mcp.server import MCPServer
from mcp.server.mcpserver import Context

from accounts.principal import principal_for_user
from gateway import handoff, messages
from servers.models import Server
from servers.services.registry import server_toggle
from tests.factories import ServerFactory
from tests.gateway.gateway_calls import (  # noqa: F401
    INITIALIZE,
    LIST,
    bearer,
    caller_fixture,
    gateway_fixture,
    list_and_call,
    open_session,
    post,
    read_events,
    run,
    stream,
)
from tests.mcp_servers import (  # noqa: F401
    UvicornThread,
    loopback_socket,
    resumable_server_fixture,
    time_tools,
)
from tests.nginx import Nginx
from tests.task_server import task_server

pytestmark = pytest.mark.django_db(transaction=True)

EVERYTHING = {"methods": ["*"], "tools": ["*"]}


class Counted:
    """An ASGI app that counts the HTTP requests reaching it."""

    def __init__(self, app):
        self.app, self.requests = app, 0

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            self.requests += 1
        await self.app(scope, receive, send)


def whoami_app():
    server = time_tools(MCPServer("Who am I", log_level="WARNING"))

    @server.tool()
    def whoami(ctx: Context) -> str:
        """The identity and credential headers this call arrived with."""
        headers = ctx.request_context.request.headers
        names = ("x-user", "x-server-name", "x-tool-name", "authorization", "cookie")
        return json.dumps({name: headers.get(name) for name in names})

    @server.tool()
    def headers_seen(ctx: Context) -> str:
        """The names of every header this call arrived with."""
        return json.dumps(sorted({name.lower() for name in ctx.request_context.request.headers}))

    return Counted(server.streamable_http_app())


def whoami_server():
    """A running whoami server; `.app.requests` counts what reached it."""
    app = whoami_app()
    running = UvicornThread(app, loopback_socket()).start()
    running.app = app
    yield running
    running.stop()


alpha = pytest.fixture(whoami_server, scope="module", name="alpha")
beta = pytest.fixture(whoami_server, scope="module", name="beta")


@pytest.fixture
def front(gateway, tmp_path):
    """Write the configuration for the servers registered so far and start nginx with it."""
    started = []

    def start() -> Nginx:
        port = loopback_socket().getsockname()[1]
        site = tmp_path / "nginx" / "site.conf"
        site.parent.mkdir(exist_ok=True)
        call_command(
            "nginx_config",
            registry=[f"127.0.0.1:{gateway.port}"],
            listen=[f"127.0.0.1:{port}"],
            output=str(site),
        )
        started.append(Nginx(tmp_path / "nginx", site.read_text(), port).start())
        return started[-1]

    yield start
    for nginx in started:
        nginx.stop()


async def whoami(client):
    return json.loads((await client.call_tool("whoami", {})).content[0].text)


def rules(server: str, tools: list[str]) -> dict:
    return {"server": server, "methods": ["initialize", "tools/list", "tools/call"], "tools": tools}


def test_an_allowed_user_lists_and_calls_tools_through_nginx_and_a_forbidden_tool_is_refused(
    front, caller, alpha
):
    ServerFactory(path="/alpha", proxy_pass_url=alpha.url("/mcp"))
    token = caller(rules("/alpha", ["add", "echo", "whoami"]))
    nginx = front()

    tools, added, denied = run(nginx.url("/alpha/mcp"), token, list_and_call)
    identity = run(nginx.url("/alpha/mcp"), token, whoami)

    assert tools == ["add", "echo", "whoami"]
    assert added == "5"
    assert denied == "Access denied: 'gina' may not call tool 'current_time' on server '/alpha'."
    assert identity == {  # carried by nginx: who is calling, and not the client's credentials
        "x-user": "gina",
        "x-server-name": "alpha",
        "x-tool-name": "whoami",
        "authorization": None,
        "cookie": None,
    }


# Headers a client might send hoping a server behind the proxy takes them for who is calling.
SPOOFED = {
    "Remote-User": "root",
    "X-Forwarded-User": "root",
    "X-Remote-User": "root",
    "X-Auth-Request-User": "root",
    "X-Auth-Request-Email": "root@example.com",
    "X-Forwarded-Email": "root@example.com",
    "X-Groups": "admins",
    "X-Accel-Redirect": "@elsewhere",
    "X-Mcp-Upstream": "mcp_000000000000",
    "X-User": "root",
    "X-Scopes": "admin",
    "Cookie": "sessionid=stolen",
}
# What a handed-off call may carry: the protocol's and the content's headers, and who is calling.
HANDED_OFF = {
    "accept",
    "content-type",
    "content-length",
    "host",
    "mcp-protocol-version",
    "mcp-session-id",
    "x-forwarded-for",
    "x-forwarded-proto",
    "x-user",
    "x-username",
    "x-client-id",
    "x-scopes",
    "x-auth-method",
    "x-server-name",
    "x-tool-name",
}


def test_a_stream_resumed_through_nginx_replays_tool_lists_cut_to_the_callers_tools(
    front, caller, resumable_server
):
    ServerFactory(path="/clock", proxy_pass_url=resumable_server)
    token = caller(rules("/clock", ["add"]))
    nginx = front()
    session = open_session(nginx.port, token)
    _, _, body = post(nginx.port, "/clock/mcp", LIST, bearer(token, **{"Mcp-Session-Id": session}))
    lines = body.replace(b"\r\n", b"\n").split(b"\n")
    first_event = next(line[3:].strip().decode() for line in lines if line.startswith(b"id:"))

    connection, resumed = stream(nginx.port, token, session, **{"Last-Event-ID": first_event})
    replayed = read_events(resumed, 1)
    connection.close()

    assert resumed.status == 200
    assert [tool["name"] for tool in replayed[0]["result"]["tools"]] == ["add"]


def test_after_a_handoff_the_server_gets_no_header_the_client_chose_to_pass_for_identity(
    front, caller, alpha
):
    ServerFactory(path="/alpha", proxy_pass_url=alpha.url("/mcp"))
    token = caller(rules("/alpha", ["whoami", "headers_seen"]))
    nginx = front()
    handed_off = alpha.app.requests

    async def both(client):
        seen = json.loads((await client.call_tool("headers_seen", {})).content[0].text)
        return seen, await whoami(client)

    seen, identity = run(nginx.url("/alpha/mcp"), token, both, headers=SPOOFED)

    assert alpha.app.requests > handed_off
    assert set(seen) <= HANDED_OFF, set(seen) - HANDED_OFF
    assert identity["x-user"] == "gina" and identity["cookie"] is None


@pytest.mark.parametrize(
    "path",
    [
        "/alpha/../beta/mcp",
        "/alpha/%2e%2e/beta/mcp",
        "/alpha/%2E%2E/beta/mcp",
        "/alpha/x/../../beta/mcp",
        "/alpha//../beta/mcp",
        "/alpha/..%2fbeta/mcp",
        "/alpha/%2e%2e%2fbeta/mcp",
    ],
)
def test_a_user_granted_alpha_cannot_reach_beta_through_nginx(front, caller, alpha, beta, path):
    ServerFactory(path="/alpha", proxy_pass_url=alpha.url("/mcp"))
    ServerFactory(path="/beta", proxy_pass_url=beta.url("/mcp"))
    token = caller({"server": "/alpha", **EVERYTHING})
    nginx = front()
    reached = beta.app.requests

    status, _, body = post(nginx.port, path, INITIALIZE, {"Authorization": f"Bearer {token}"})

    assert (status, json.loads(body)["error_code"]) == (400, "bad_request")
    assert beta.app.requests == reached


def test_a_nested_path_reaches_the_server_that_was_authorised(front, caller, alpha, beta):
    ServerFactory(path="/alpha", proxy_pass_url=alpha.url("/mcp"))
    ServerFactory(path="/beta", proxy_pass_url=beta.url("/mcp"))
    token = caller({"server": "/alpha", **EVERYTHING})
    nginx = front()
    reached_alpha, reached_beta = alpha.app.requests, beta.app.requests

    nested = post(nginx.port, "/alpha/beta/mcp", INITIALIZE, {"Authorization": f"Bearer {token}"})
    direct = post(nginx.port, "/beta/mcp", INITIALIZE, {"Authorization": f"Bearer {token}"})

    assert nested[0] == 200  # /alpha/beta is not registered: the server is /alpha
    assert (alpha.app.requests, beta.app.requests) == (reached_alpha + 1, reached_beta)
    assert direct[0] == 200
    assert json.loads(direct[2])["error"]["message"] == (
        "Access denied: 'gina' may not call 'initialize' on server '/beta'."
    )


def test_a_user_granted_only_team_weather_reaches_it_through_nginx(front, caller, alpha, beta):
    ServerFactory(path="/team", proxy_pass_url=beta.url("/mcp"))
    ServerFactory(path="/team/weather", proxy_pass_url=alpha.url("/mcp"))
    token = caller(rules("/team/weather", ["add", "echo", "whoami"]))
    nginx = front()

    tools, added, _ = run(nginx.url("/team/weather/mcp"), token, list_and_call)
    identity = run(nginx.url("/team/weather/mcp"), token, whoami)
    team = post(nginx.port, "/team/mcp", INITIALIZE, {"Authorization": f"Bearer {token}"})

    assert (tools, added) == (["add", "echo", "whoami"], "5")
    assert identity["x-server-name"] == "team/weather"
    assert json.loads(team[2])["error"]["message"] == (
        "Access denied: 'gina' may not call 'initialize' on server '/team'."
    )


def test_without_credentials_nginx_passes_the_registrys_challenge_on(front, alpha):
    ServerFactory(path="/alpha", proxy_pass_url=alpha.url("/mcp"))
    nginx = front()

    status, headers, body = post(nginx.port, "/alpha/mcp", INITIALIZE)

    assert status == 401  # the URL of the metadata is the one the client used: nginx's
    assert headers["www-authenticate"] == (
        f'Bearer resource_metadata="http://127.0.0.1:{nginx.port}/.well-known/oauth-protected-resource'
        '/alpha/mcp", scope="mcp"'
    )
    assert json.loads(body)["error_code"] == "not_authenticated"


def test_toggles_need_no_regeneration_and_new_origins_are_served_by_the_registry_meanwhile(
    front, caller, alpha, beta
):
    ServerFactory(path="/alpha", proxy_pass_url=alpha.url("/mcp"))
    token = caller({"server": "/alpha", **EVERYTHING}, {"server": "/beta", **EVERYTHING})
    nginx = front()
    before = post(nginx.port, "/alpha/mcp", INITIALIZE, {"Authorization": f"Bearer {token}"})
    server_toggle(actor=None, server=Server.objects.get(path="/alpha"), enabled=False)
    ServerFactory(path="/beta", proxy_pass_url=beta.url("/mcp"))  # an origin the configuration lacks

    disabled = post(nginx.port, "/alpha/mcp", INITIALIZE, {"Authorization": f"Bearer {token}"})
    identity = run(nginx.url("/beta/mcp"), token, whoami)

    assert before[0] == 200
    assert (disabled[0], json.loads(disabled[2])["error_code"]) == (404, "not_found")
    assert identity == {  # served by the registry's own gateway: no identity headers, no credentials
        "x-user": None,
        "x-server-name": None,
        "x-tool-name": None,
        "authorization": None,
        "cookie": None,
    }


def test_a_client_cannot_ask_the_registry_for_a_handoff(gateway, caller, alpha):
    ServerFactory(path="/alpha", proxy_pass_url=alpha.url("/mcp"))
    token = caller({"server": "/alpha", **EVERYTHING})
    forged = "0" * 32 + " mcp_000000000000"

    status, headers, body = post(
        gateway.port,
        "/alpha/mcp",
        INITIALIZE,
        {"Authorization": f"Bearer {token}", "X-Gateway-Handoff": forged},
    )

    assert status == 200
    assert "X-Accel-Redirect" not in headers and "x-accel-redirect" not in headers
    assert b"serverInfo" in body


def test_the_configuration_is_rewritten_only_when_it_changes(tmp_path, alpha, capsys):
    ServerFactory(path="/alpha", proxy_pass_url=alpha.url("/mcp"))
    site = tmp_path / "site.conf"

    call_command("nginx_config", output=str(site))
    first = site.read_text()
    call_command("nginx_config", output=str(site))
    ServerFactory(path="/beta", proxy_pass_url="https://mcp.example.com/mcp")
    call_command("nginx_config", output=str(site))

    messages = capsys.readouterr().err.splitlines()
    assert messages == [
        f"Wrote {site}. Check and reload nginx: nginx -t && nginx -s reload",
        f"{site} is up to date; nothing to reload.",
        f"Wrote {site}. Check and reload nginx: nginx -t && nginx -s reload",
    ]
    assert "# http://127.0.0.1:" in first and ": /alpha\n" in first
    assert "server mcp.example.com:443;" in site.read_text()
    assert "proxy_ssl_verify on;" in site.read_text() and "proxy_ssl_verify" not in first


CALL_ADD = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add"}}
CALL_SECRET = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "secret"}}
DENIED_NOTE = {"jsonrpc": "2.0", "method": "notifications/initialized"}


@pytest.mark.parametrize(
    "body, endpoint, server_headers, offered, expected",
    [
        (CALL_ADD, "mcp", {}, True, True),
        ([CALL_ADD, CALL_ADD | {"id": 5}], "mcp", {}, True, True),
        (LIST, "mcp", {}, True, False),  # the tool list is cut by the gateway
        ([CALL_ADD, CALL_SECRET], "mcp", {}, True, False),  # the denied call is answered by the gateway
        (CALL_ADD, "mcp", {"X-Key": "k"}, True, False),  # outbound headers stay out of nginx
        (CALL_ADD, "messages", {}, True, False),  # the SSE transport
        (CALL_ADD, "mcp", {}, False, False),  # an origin the configuration does not know
        (None, "mcp", {}, True, False),  # the session's GET stream: filtered by the gateway
        (INITIALIZE, "mcp", {}, True, False),  # the session it opens is bound to the caller
    ],
)
def test_only_requests_that_travel_unchanged_are_handed_to_nginx(
    member, scope_factory, body, endpoint, server_headers, offered, expected
):
    server = ServerFactory(path="/alpha", proxy_pass_url="http://127.0.0.1:9/mcp", headers=server_headers)
    scope_factory("s", group="g", server_rules=[rules("/alpha", ["add"])])
    principal = principal_for_user(member("gina", "g"), auth_method="session")
    checked = None if body is None else messages.check_body(body, principal, "/alpha")
    names = handoff.offered(
        handoff.offer([handoff.upstream_name(server.proxy_pass_url) if offered else "mcp_x"])
    )

    assert (
        handoff.can_hand_off(server, names, endpoint, checked, "GET" if body is None else "POST") is expected
    )


def test_the_end_of_a_session_is_handed_to_nginx(member):
    server = ServerFactory(path="/alpha", proxy_pass_url="http://127.0.0.1:9/mcp")
    names = handoff.offered(handoff.offer([handoff.upstream_name(server.proxy_pass_url)]))

    assert handoff.can_hand_off(server, names, "mcp", None, "DELETE") is True


def test_a_denied_notification_keeps_the_request_with_the_gateway(member, scope_factory):
    scope_factory(
        "s", group="g", server_rules=[{"server": "/alpha", "methods": ["tools/call"], "tools": ["*"]}]
    )
    principal = principal_for_user(member("gina", "g"), auth_method="session")

    checked = messages.check_body([CALL_ADD, DENIED_NOTE], principal, "/alpha")

    assert (len(checked.forward), checked.dropped, checked.untouched) == (1, 1, False)


def test_a_call_that_may_create_a_task_stays_with_the_gateway_so_its_task_is_the_callers(
    front, member, scope_factory, token_for
):
    running, jobs = task_server()
    ServerFactory(path="/jobs", proxy_pass_url=running.url("/mcp"))
    scope_factory("jobs", group="jobs", server_rules=[{"server": "/jobs", "methods": ["*"], "tools": ["*"]}])
    token = token_for(member("ida", "jobs"))
    nginx = front()
    meta = {
        "io.modelcontextprotocol/clientInfo": {"name": "tasks-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    }

    def sent(method: str, params: dict, name: str) -> dict:
        message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
        headers = {
            "Authorization": f"Bearer {token}",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": method,
            "Mcp-Name": name,
        }
        status, _, body = post(nginx.port, "/jobs/mcp", message, headers)
        assert status == 200, body
        return json.loads(body)

    try:
        created = sent("tools/call", {"name": "long_report", "arguments": {}}, "long_report")["result"]
        polled = sent("tasks/get", {"taskId": created["taskId"]}, created["taskId"])["result"]
    finally:
        running.stop()

    (upstream,) = jobs.tasks
    assert created["taskId"].startswith("registry-task.") and upstream not in created["taskId"]
    assert (polled["taskId"], polled["status"]) == (created["taskId"], "working")
