"""Real MCP servers (and deliberately broken ones) on loopback, for health-check and discovery tests.

The good servers are built with the official SDK (`MCPServer`, and the low-level `Server` where a test
needs control `MCPServer` does not give, such as paginated `tools/list`) and served by uvicorn in a
background thread, each on a socket bound to 127.0.0.1 port 0, so ports never collide. The bad ones
reproduce what a health checker meets in the field: nothing listening, a peer that accepts and never
answers, an HTML page, a body that is JSON but not JSON-RPC, an HTTP 500, and a JSON-RPC error.

Fixtures are session-scoped: the servers hold no state between checks, and starting them once keeps
the test files fast. A test module imports the `*_fixture` functions to use them; each registers under
the name without the suffix, so test arguments do not shadow the import.
"""

import json
import socket
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

import mcp_types as types
import pytest
import uvicorn
from mcp.server import MCPServer
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context
from mcp.server.streamable_http import EventMessage, EventStore
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse
from starlette.routing import Route

LOOPBACK = "127.0.0.1"
STARTUP_TIMEOUT = 10.0

# The bearer-protected server accepts these tokens; the second lacks the scope it requires (403).
AUTH_TOKEN = "registry-health-token"
UNSCOPED_TOKEN = "registry-unscoped-token"
REQUIRED_SCOPE = "mcp:tools"

# The paginating server lists this many tools, PAGE_SIZE per tools/list page.
PAGED_TOOL_COUNT = 120
PAGE_SIZE = 50


def loopback_socket() -> socket.socket:
    """A TCP socket bound to a free loopback port (not yet listening)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((LOOPBACK, 0))
    return sock


class UvicornThread:
    """One uvicorn server running an ASGI app in a daemon thread, on a socket bound before start.

    Binding first lets an app know its own URL (the SDK's bearer auth needs it) and leaves no window
    in which another process could take the port."""

    def __init__(self, app, sock: socket.socket, tls: tuple | None = None):
        """`tls`: (certificate file, key file) to serve https."""
        self.sock = sock
        self.port = sock.getsockname()[1]
        self.scheme = "https" if tls else "http"
        certificate, key = tls or (None, None)
        config = uvicorn.Config(
            app,
            log_level="warning",
            timeout_graceful_shutdown=1,
            access_log=False,
            ssl_certfile=certificate and str(certificate),
            ssl_keyfile=key and str(key),
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [sock]}, name=f"uvicorn-{self.port}", daemon=True
        )

    def url(self, path: str) -> str:
        return f"{self.scheme}://{LOOPBACK}:{self.port}{path}"

    def start(self) -> "UvicornThread":
        self.thread.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"uvicorn on port {self.port} did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        # Streams still open after a second (an SSE stream whose client vanished) are cancelled.
        self.server.should_exit = True
        self.thread.join(timeout=5)
        self.sock.close()


class SilentServer:
    """Accepts TCP connections and never reads or answers: the worst case for a client's timeouts."""

    def __init__(self):
        self.sock = loopback_socket()
        self.sock.listen(16)
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://{LOOPBACK}:{self.port}/mcp"
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, name=f"silent-{self.port}", daemon=True)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._held.append(conn)

    def start(self) -> "SilentServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(timeout=5)
        for conn in self._held:
            conn.close()
        self.sock.close()


# --- the good servers -------------------------------------------------------------------------------


def time_tools(server: MCPServer) -> MCPServer:
    """Register the three tools every good test server offers."""

    @server.tool()
    def current_time(timezone: str) -> str:
        """Return the current time in an IANA timezone."""
        return datetime.now(ZoneInfo(timezone)).isoformat()

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    return server


class StaticTokenVerifier:
    """The SDK's `TokenVerifier` protocol over two fixed tokens: one fully scoped, one without scopes."""

    async def verify_token(self, token: str) -> AccessToken | None:
        scopes = {AUTH_TOKEN: [REQUIRED_SCOPE], UNSCOPED_TOKEN: []}.get(token)
        if scopes is None:
            return None
        return AccessToken(token=token, client_id="registry", scopes=scopes)


def bearer_protected_app(port: int):
    """A streamable-HTTP MCP server behind the SDK's own bearer auth: 401 without a valid token, 403
    for a token lacking the required scope. The issuer is never contacted (the checker does no OAuth)."""
    server = MCPServer(
        "Protected Time",
        log_level="WARNING",
        token_verifier=StaticTokenVerifier(),
        auth=AuthSettings(
            issuer_url=f"http://{LOOPBACK}:{port}",
            resource_server_url=f"http://{LOOPBACK}:{port}/mcp",
            required_scopes=[REQUIRED_SCOPE],
            validate_token_resource=False,
        ),
    )
    return time_tools(server).streamable_http_app()


def paged_tool(index: int) -> types.Tool:
    return types.Tool(
        name=f"tool_{index:03d}",
        description=f"Paged tool number {index}",
        input_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    )


def paginating_app():
    """A low-level SDK server that splits `tools/list` into pages linked by `nextCursor`.

    `MCPServer` always answers `tools/list` in one page, so the client's cursor loop needs this one."""
    tools = [paged_tool(i) for i in range(PAGED_TOOL_COUNT)]

    async def list_tools(ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + PAGE_SIZE
        next_cursor = str(end) if end < len(tools) else None
        return types.ListToolsResult(tools=tools[start:end], next_cursor=next_cursor)

    return Server("Paged Tools", on_list_tools=list_tools).streamable_http_app()


class MemoryEventStore(EventStore):
    """Every event of every stream kept in memory, so a client can resume a stream (`Last-Event-ID`)."""

    def __init__(self):
        self.events: list[tuple[str, str, object]] = []

    async def store_event(self, stream_id, message):
        event_id = str(len(self.events) + 1)
        self.events.append((stream_id, event_id, message))
        return event_id

    async def replay_events_after(self, last_event_id, send_callback):
        stream = next((s for s, e, _ in self.events if e == last_event_id), None)
        if stream is None:
            return None
        for stream_id, event_id, message in self.events:
            if stream_id == stream and int(event_id) > int(last_event_id) and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream


# --- servers of one protocol era ---------------------------------------------------------------------

MODERN = "2026-07-28"


def _header(scope, name: bytes) -> str | None:
    return next((v.decode("latin-1") for k, v in scope["headers"] if k == name), None)


def modern_only_app():
    """A server that speaks only 2026-07-28: it refuses the `initialize` handshake (any request without
    that protocol version header) with -32022, naming the one version it serves, as such servers do."""
    app = time_tools(MCPServer("Modern Time", log_level="WARNING")).streamable_http_app()

    async def modern_only(scope, receive, send):
        if scope["type"] == "http" and _header(scope, b"mcp-protocol-version") != MODERN:
            if scope["method"] != "POST":
                return await PlainTextResponse("Method Not Allowed", status_code=405)(scope, receive, send)
            error = {
                "code": -32022,
                "message": "Unsupported protocol version",
                "data": {"supported": [MODERN], "requested": _header(scope, b"mcp-protocol-version")},
            }
            response = JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=400)
            return await response(scope, receive, send)
        return await app(scope, receive, send)

    return modern_only


def pinned_version_app(version: str):
    """A server of the `initialize` era that speaks only `version` (2025-03-26, 2025-06-18, 2025-11-25):
    its `initialize` answer names that version whatever the client asks, and, like every server before
    2026-07-28, it knows no `server/discover` (a request outside a session is refused, 400)."""
    app = time_tools(MCPServer(f"Time {version}", log_level="WARNING")).streamable_http_app()

    async def pinned(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        headers = [(k, v) for k, v in scope["headers"] if k != b"mcp-protocol-version"]
        stated = _header(scope, b"mcp-protocol-version")
        if stated not in (None, version) and version != "2025-03-26":
            response = JSONResponse({"error": f"Unsupported protocol version: {stated}"}, status_code=400)
            return await response(scope, receive, send)
        if version != "2025-03-26" and stated is not None:
            headers.append((b"mcp-protocol-version", stated.encode()))  # 2025-03-26 had no such header
        if scope["method"] != "POST":
            return await app({**scope, "headers": headers}, receive, send)
        body = bytearray()
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        payload = json.loads(body)
        if isinstance(payload, dict) and payload.get("method") == "initialize":
            payload["params"]["protocolVersion"] = version
        elif _header(scope, b"mcp-session-id") is None:
            response = JSONResponse({"error": "Bad Request: Missing session ID"}, status_code=400)
            return await response(scope, receive, send)
        data = json.dumps(payload).encode()
        headers = [(k, v) for k, v in headers if k != b"content-length"]
        headers.append((b"content-length", str(len(data)).encode()))
        sent = False

        async def replay():
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": data, "more_body": False}

        return await app({**scope, "headers": headers}, replay, send)

    return pinned


# --- the bad servers --------------------------------------------------------------------------------

HTML_PAGE = "<!doctype html><html><head><title>Welcome</title></head><body>It works!</body></html>"


async def html_page(request: Request):
    return HTMLResponse(HTML_PAGE)


async def not_json_rpc(request: Request):
    return JSONResponse({"status": "ok", "service": "definitely not MCP"})


async def server_error(request: Request):
    return PlainTextResponse("Internal Server Error", status_code=500)


RPC_ERROR_MESSAGE = "backend unavailable: " + "connection pool exhausted; " * 20


async def rpc_error(request: Request):
    """A well-formed JSON-RPC error answering whatever request came, with a very long message."""
    body = await request.json()
    error = {"code": -32603, "message": RPC_ERROR_MESSAGE}
    return JSONResponse({"jsonrpc": "2.0", "id": body.get("id"), "error": error})


def faulty_app():
    """One plain web app whose paths each misbehave in one way, for both GET (SSE) and POST."""
    methods = ["GET", "POST", "DELETE"]
    return Starlette(
        routes=[
            Route("/html", html_page, methods=methods),
            Route("/invalid-jsonrpc", not_json_rpc, methods=methods),
            Route("/error-500", server_error, methods=methods),
            Route("/rpc-error", rpc_error, methods=["POST"]),
        ]
    )


# --- fixtures ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FaultUrls:
    refused: str
    silent: str
    html: str
    invalid_jsonrpc: str
    error_500: str
    rpc_error: str


async def asgi_body(receive) -> bytes:
    """The whole body of an ASGI request."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


class RequiresHeader:
    """An upstream behind a credential: every request without `name: value` is answered 401."""

    def __init__(self, app, name: str, value: str | tuple[str, ...]):
        values = (value,) if isinstance(value, str) else value
        self.app, self.name, self.values = app, name.lower().encode(), {v.encode() for v in values}
        self.seen: list[dict[bytes, bytes]] = []  # each request's headers

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            self.seen.append(headers)
            if headers.get(self.name) not in self.values:
                body = b'{"error": "unauthorized"}'
                headers = [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ]
                await send({"type": "http.response.start", "status": 401, "headers": headers})
                return await send({"type": "http.response.body", "body": body})
        await self.app(scope, receive, send)


class HeaderRecorder:
    """An upstream that notes the headers of every HTTP request it is sent (`seen`, in order)."""

    def __init__(self, app):
        self.app, self.seen = app, []

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            self.seen.append(dict(scope["headers"]))
        await self.app(scope, receive, send)


def recorded_time_server() -> tuple[UvicornThread, HeaderRecorder]:
    """A time server of its own, whose requests' headers are noted."""
    recorder = HeaderRecorder(time_tools(MCPServer("Recorded", log_level="WARNING")).streamable_http_app())
    return _serve(recorder), recorder


def _serve(app, sock: socket.socket | None = None) -> UvicornThread:
    return UvicornThread(app, sock or loopback_socket()).start()


@pytest.fixture(scope="session", name="time_server")
def time_server_fixture():
    """URL of a streamable-HTTP MCP server offering `current_time`, `add` and `echo`."""
    running = _serve(time_tools(MCPServer("Current Time", log_level="WARNING")).streamable_http_app())
    yield running.url("/mcp")
    running.stop()


@pytest.fixture(scope="session", name="sse_server")
def sse_server_fixture():
    """URL of the SSE endpoint of an MCP server offering `current_time`, `add` and `echo`."""
    running = _serve(time_tools(MCPServer("Current Time over SSE", log_level="WARNING")).sse_app())
    yield running.url("/sse")
    running.stop()


@pytest.fixture(scope="session", name="auth_server")
def auth_server_fixture():
    """URL of a streamable-HTTP MCP server that requires `Authorization: Bearer AUTH_TOKEN`."""
    sock = loopback_socket()
    running = _serve(bearer_protected_app(sock.getsockname()[1]), sock)
    yield running.url("/mcp")
    running.stop()


def keyed_app():
    """A server whose `whoami` tool answers with the `X-API-Key` header its HTTP request carried: whose
    credential the gateway sent on this call."""
    server = time_tools(MCPServer("Keyed", log_level="WARNING"))

    @server.tool()
    def whoami(ctx: Context) -> str:
        """Say which key this call came with."""
        return (ctx.headers or {}).get("x-api-key", "no key")

    return server.streamable_http_app()


@pytest.fixture(scope="session", name="keyed_server")
def keyed_server_fixture():
    """URL of a streamable-HTTP MCP server telling each call which `X-API-Key` it came with."""
    running = _serve(keyed_app())
    yield running.url("/mcp")
    running.stop()


def library_app():
    """A server with a tool that takes a repository, an `echo` of its own, a prompt, a resource and a
    resource template (for virtual servers of several members)."""
    server = MCPServer("Library", log_level="WARNING")

    @server.tool()
    def search(query: str, repository: str) -> str:
        """Search a repository."""
        return f"{repository}: {query}"

    @server.tool()
    def echo(text: str) -> str:
        """Echo, the library's way."""
        return f"library says {text}"

    @server.prompt()
    def review(code: str) -> str:
        """Ask for a review of some code."""
        return f"Please review: {code}"

    @server.resource("file:///readme.md")
    def readme() -> str:
        """The library's readme."""
        return "Read me first."

    @server.resource("file:///docs/{name}")
    def doc(name: str) -> str:
        """A page of the library's documentation."""
        return f"The page {name}."

    return server.streamable_http_app()


class ReaderAnswer(BaseModel):
    text: str


def desk_app():
    """A server that asks its client things mid-call (elicitation, sampling), adds a tool when told and
    says its list changed, and tells subscribers a note changed (each on the session's own GET stream,
    outside any request, when `related` is false); a note resource and a `review` prompt of its own."""
    server = MCPServer("Desk", log_level="WARNING")

    @server.tool()
    async def ask_reader(question: str, ctx: Context) -> str:
        """Ask the user a question."""
        result = await ctx.elicit(message=question, schema=ReaderAnswer)
        return f"{result.action}: {result.data.text if result.action == 'accept' else ''}"

    @server.tool()
    async def summarize(text: str, ctx: Context) -> str:
        """Ask the client's model for a summary."""
        message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=text))
        result = await ctx.session.create_message(
            messages=[message], max_tokens=50, related_request_id=ctx.request_id
        )
        return f"summary: {result.content.text}"

    @server.tool()
    async def shelve(name: str, ctx: Context) -> str:
        """Add a tool of this name, and tell the client its tool list changed."""
        server.add_tool(lambda: f"the {name} shelf", name=name, description=f"The {name} shelf.")
        await ctx.session.send_tool_list_changed()
        return f"shelved {name}"

    @server.tool()
    async def touch(uri: str, ctx: Context) -> str:
        """Tell the client the resource at `uri` changed."""
        await ctx.session.send_resource_updated(uri)
        return f"touched {uri}"

    @server.prompt()
    def review(code: str) -> str:
        """The desk's own review prompt."""
        return f"Desk review: {code}"

    @server.resource("file:///readme.md")
    def note() -> str:
        """The desk's note."""
        return "A note on the desk."

    return server.streamable_http_app()


@pytest.fixture(scope="session", name="library_server")
def library_server_fixture():
    """URL of a streamable-HTTP MCP server with tools, a prompt, a resource and a resource template."""
    running = _serve(library_app())
    yield running.url("/mcp")
    running.stop()


@pytest.fixture(scope="session", name="paged_server")
def paged_server_fixture():
    """URL of a streamable-HTTP MCP server listing PAGED_TOOL_COUNT tools over several pages."""
    running = _serve(paginating_app())
    yield running.url("/mcp")
    running.stop()


@pytest.fixture(scope="session", name="resumable_server")
def resumable_server_fixture():
    """URL of a time server that keeps its events, so streams can be resumed with Last-Event-ID."""
    app = time_tools(MCPServer("Resumable Time", log_level="WARNING")).streamable_http_app(
        event_store=MemoryEventStore()
    )
    running = _serve(app)
    yield running.url("/mcp")
    running.stop()


@pytest.fixture(scope="session", name="era_servers")
def era_servers_fixture():
    """URLs of servers that each speak one protocol revision, by revision."""
    running = {MODERN: _serve(modern_only_app())}
    for version in ("2025-03-26", "2025-06-18", "2025-11-25"):
        running[version] = _serve(pinned_version_app(version))
    yield {version: server.url("/mcp") for version, server in running.items()}
    for server in running.values():
        server.stop()


@pytest.fixture(scope="session", name="fault_servers")
def fault_servers_fixture():
    """URLs that fail in each way a health check must report as unhealthy."""
    refused = loopback_socket()  # bound but never listening: connecting is refused
    silent = SilentServer().start()
    faulty = _serve(faulty_app())
    yield FaultUrls(
        refused=f"http://{LOOPBACK}:{refused.getsockname()[1]}/mcp",
        silent=silent.url,
        html=faulty.url("/html"),
        invalid_jsonrpc=faulty.url("/invalid-jsonrpc"),
        error_500=faulty.url("/error-500"),
        rpc_error=faulty.url("/rpc-error"),
    )
    faulty.stop()
    silent.stop()
    refused.close()
