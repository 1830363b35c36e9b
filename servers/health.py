"""Health checks and tool discovery over a real MCP session (the official `mcp` SDK, 2.x).

`probe` opens a client session the way an MCP host would, runs the `initialize` handshake and a
paginated `tools/list`, and turns whatever happens into a `CheckResult`: a fixed status plus a short
detail an operator can act on. It never raises, and a deadline bounds it as a whole, because a sweep
of hundreds of servers must not stall on one bad peer.

The SDK folds HTTP-level failures into generic JSON-RPC errors ("Server returned an error
response"), so the probe watches the HTTP responses itself (an httpx2 response hook) to report the
status code and content type that actually explain a failure.
"""

import asyncio
import logging
import socket
import ssl
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import cache, partial
from http import HTTPStatus

import anyio
import httpx2
import mcp_types
from django.conf import settings
from django.utils import timezone
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from core.metric_choices import MetricType
from core.metrics_client import emit
from core.targets import TARGETS
from servers.check_results import CheckResult
from servers.choices import HealthStatus, Transport
from servers.models import Server
from servers.pins import definition_of
from servers.served_skills import skills_of
from servers.services import server_health_record
from servers.upstream_auth import CredentialMissing, CredentialUnavailable

logger = logging.getLogger(__name__)

DETAIL_MAX_LENGTH = 300
MAX_TOOL_PAGES = 100  # a server whose cursors never end cannot keep a check busy past this many pages

# Every protocol revision from 2025-03-26 to 2026-07-28: the SDK's "auto" first asks the stateless
# revision's `server/discover` and falls back to the `initialize` handshake when the server does not
# speak it (an older server refuses the probe, which is no failure of the server's).
CONNECT_MODE = "auto"
DISCOVER_METHOD = "server/discover"

AUTH_STATUSES = (401, 403)
MCP_CONTENT_TYPES = ("application/json", "text/event-stream")


class ToolListingError(Exception):
    """The server's `tools/list` pagination misbehaved (repeated or endless cursors)."""


@dataclass
class _HttpWatch:
    """The first HTTP answer that explains a failure, recorded as responses arrive.

    Only the requests that carry the MCP conversation are watched: POSTs for streamable HTTP, and the
    event stream (GET) and POSTs for SSE. Streamable HTTP's optional GET stream and closing DELETE may
    legitimately answer 405 on a healthy server."""

    transport: str
    error_status: int | None = None
    unexpected_type: str | None = None

    async def on_response(self, response: httpx2.Response) -> None:
        method = response.request.method
        watched = ("POST", "GET") if self.transport == Transport.SSE else ("POST",)
        if method not in watched or response.request.headers.get("mcp-method") == DISCOVER_METHOD:
            return
        if response.status_code >= 400:
            if self.error_status is None:
                self.error_status = response.status_code
            return
        if method == "POST" and (self.transport == Transport.SSE or response.status_code == 202):
            return  # SSE POSTs and notification POSTs answer 202 with no MCP body
        expected = ("text/event-stream",) if method == "GET" else MCP_CONTENT_TYPES
        content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        if content_type not in expected and self.unexpected_type is None:
            self.unexpected_type = content_type or "no content type"


@cache
def tls_context() -> ssl.SSLContext:
    """One verifying TLS context per process. httpx2 builds a new one for every client, loading the
    whole CA bundle (35–60 ms of CPU), which was most of a check's cost (`docs/benchmarks.md`)."""
    return httpx2.create_ssl_context()


def _http_client(
    watch: _HttpWatch, headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth=None
) -> httpx2.AsyncClient:
    """An httpx2 client with the server's outbound headers and the response watch.

    Its timeouts never undercut the probe's own deadline, which is what really bounds a check."""
    return httpx2.AsyncClient(
        headers=headers,
        timeout=timeout,
        auth=auth,
        verify=tls_context(),
        event_hooks={"response": [watch.on_response]},
    )


@asynccontextmanager
async def _session(url: str, *, transport: str, headers: dict[str, str], timeout: float, watch: _HttpWatch):
    """An initialized SDK `Client` over `transport`, with every HTTP response seen by `watch`."""
    if transport == Transport.SSE:
        mcp_transport = sse_client(
            url,
            headers=headers,
            timeout=timeout,
            sse_read_timeout=timeout,
            httpx_client_factory=partial(_http_client, watch),
        )
        async with Client(mcp_transport, mode=CONNECT_MODE, cache=None) as client:
            yield client
        return
    # streamable_http_client leaves a caller's httpx2 client open, so it is closed here.
    async with _http_client(watch, headers, httpx2.Timeout(timeout)) as http:
        mcp_transport = streamable_http_client(url, http_client=http)
        async with Client(mcp_transport, mode=CONNECT_MODE, cache=None) as client:
            yield client


async def _list_tools(client: Client) -> list[dict]:
    """Every tool over every `tools/list` page, first occurrence of a name winning."""
    return await _whole_list(
        "tools/list", lambda cursor: client.list_tools(cursor=cursor), "tools", _tool_entry
    )


async def _list_prompts(client: Client) -> list[dict] | None:
    """Every prompt of a server that offers prompts, as `prompts/list` spells them (servers/pins.py pins
    them); None when it offers none or cannot list them (the check does not fail for it)."""
    if client.server_capabilities.prompts is None:
        return None
    try:
        return await _whole_list(
            "prompts/list",
            lambda cursor: client.list_prompts(cursor=cursor),
            "prompts",
            lambda prompt: definition_of(
                prompt.model_dump(by_alias=True, exclude_none=True, mode="json"), "prompt"
            ),
        )
    except Exception:  # noqa: BLE001 - a server's broken prompts/list leaves its prompts as they were
        logger.info("prompts/list failed during a health check", exc_info=True)
        return None


async def _whole_list(method: str, fetch, key: str, entry) -> list[dict]:
    """Every item over every page of a list method, first occurrence of a name winning."""
    items: dict[str, dict] = {}
    cursor: str | None = None
    seen_cursors: set[str] = set()
    for _ in range(MAX_TOOL_PAGES):
        page = await fetch(cursor)
        for item in getattr(page, key):
            items.setdefault(item.name, entry(item))
        cursor = page.next_cursor
        if cursor is None:
            return list(items.values())
        if cursor in seen_cursors:
            raise ToolListingError(f"{method} repeated a pagination cursor")
        seen_cursors.add(cursor)
    raise ToolListingError(f"{method} did not end after {MAX_TOOL_PAGES} pages")


def _tool_entry(tool: mcp_types.Tool) -> dict:
    """What discovery stores of a tool, and the definition its pin compares (servers/pins.py)."""
    definition = definition_of(tool.model_dump(by_alias=True, exclude_none=True, mode="json"))
    return {
        "name": tool.name,
        "description": tool.description or "",
        "input_schema": tool.input_schema,
        "definition": definition,
    }


async def probe(url: str, *, transport: str, headers: dict[str, str], timeout: float) -> CheckResult:
    """Check one MCP server: initialize, list every tool, and describe any failure. Never raises, and
    returns within `timeout` seconds (plus the moment the SDK needs to unwind)."""
    started = time.monotonic()
    if problem := header_problem(headers):
        return CheckResult(status=HealthStatus.UNHEALTHY, detail=problem)
    watch = _HttpWatch(transport=transport)
    tools: list[dict] | None = None
    prompts: list[dict] | None = None
    skills: list[dict] | None = None
    failure: BaseException | None = None
    try:
        with anyio.move_on_after(timeout):
            async with _session(
                url, transport=transport, headers=headers, timeout=timeout, watch=watch
            ) as client:
                tools = await _list_tools(client)
                prompts = await _list_prompts(client)
                skills = await skills_of(client)
    except Exception as exc:  # ExceptionGroup included: anyio task groups wrap the transport's errors
        failure = exc
    elapsed = time.monotonic() - started
    if tools is not None:
        count = len(tools)
        status, detail = HealthStatus.HEALTHY, f"{count} tool{'' if count == 1 else 's'} listed"
    else:
        status, detail = _explain(
            leaves(failure), watch, timed_out=elapsed >= timeout, timeout=timeout, headers=headers
        )
    return CheckResult(
        status=status,
        detail=clip(detail),
        tools=tools,
        prompts=prompts if tools is not None else None,
        skills=skills if tools is not None else None,
        checked_at=timezone.now(),
        elapsed_ms=round(elapsed * 1000),
    )


def header_problem(headers: dict[str, str]) -> str | None:
    """Why an outbound header cannot be sent, naming the header but never its value (a credential)."""
    for name, value in headers.items():
        if not (name + value).isascii() or any(char in name + value for char in "\r\n\0"):
            return f"outbound header {name!r} cannot be sent: not one line of ASCII"
    return None


def _explain(
    errors: list[BaseException], watch: _HttpWatch, *, timed_out: bool, timeout: float, headers: dict
) -> tuple[str, str]:
    """The status and detail for a failed check, from the most telling evidence available: an HTTP
    status first (the SDK turns those into generic errors, and an SSE POST failure into a silent
    wait), then the deadline, the content type, the connection, and last the protocol."""
    if watch.error_status in AUTH_STATUSES:
        phrase = HTTPStatus(watch.error_status).phrase
        why = "credentials refused" if headers else "credentials required and none are configured"
        return HealthStatus.AUTH_REFUSED, f"{watch.error_status} {phrase}: {why}"
    if watch.error_status is not None:
        return HealthStatus.UNHEALTHY, f"HTTP {watch.error_status} from server"
    if timed_out or not errors or any(isinstance(e, httpx2.TimeoutException) for e in errors):
        return HealthStatus.UNHEALTHY, f"timed out after {timeout:g} s"
    if watch.unexpected_type is not None:
        kind = "HTML" if watch.unexpected_type == "text/html" else watch.unexpected_type
        return HealthStatus.UNHEALTHY, f"not an MCP server: response is {kind}"
    if connection := connection_problem(errors):
        return HealthStatus.UNHEALTHY, connection
    return HealthStatus.UNHEALTHY, _protocol_problem(errors)


def leaves(exc: BaseException | None) -> list[BaseException]:
    """The concrete exceptions inside (possibly nested) exception groups."""
    if exc is None:
        return []
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc` and the exceptions it was raised from, innermost last."""
    seen: list[BaseException] = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def connection_problem(errors: list[BaseException]) -> str | None:
    for error in errors:
        chain = _chain(error)
        if any(isinstance(e, ConnectionRefusedError) for e in chain):
            return "connection refused"
        if any(isinstance(e, socket.gaierror) for e in chain):
            return "DNS lookup failed"
        if isinstance(error, httpx2.InvalidURL | httpx2.UnsupportedProtocol):
            return f"invalid URL: {error}"
        if isinstance(error, httpx2.ConnectError):
            return f"connection failed: {error}"
        if isinstance(error, httpx2.RemoteProtocolError):
            return f"connection closed by server: {error}"
        if isinstance(error, httpx2.TransportError | OSError):
            return f"network error: {error}"
    return None


def _protocol_problem(errors: list[BaseException]) -> str:
    for error in errors:
        if isinstance(error, MCPError):
            if error.code == mcp_types.PARSE_ERROR:
                return "invalid JSON-RPC response"
            return f"MCP error {error.code}: {error.message}"
        if isinstance(error, ValidationError):
            return "invalid JSON-RPC response"
        if isinstance(error, ToolListingError):
            return str(error)
    error = errors[0]
    logger.warning("Health check failed in an unexpected way", exc_info=error)
    return f"unexpected {type(error).__name__}: {error}"


def clip(text: str) -> str:
    """One line of at most DETAIL_MAX_LENGTH characters."""
    text = " ".join(text.split())
    return text if len(text) <= DETAIL_MAX_LENGTH else text[: DETAIL_MAX_LENGTH - 1] + "…"


def _run(coro):
    """`asyncio.run`, except that closing the loop does not wait for executor threads.

    A DNS lookup runs `getaddrinfo` in the loop's executor and cannot be cancelled; on Python 3.11
    `asyncio.run` waits for it at shutdown, which could hold a worker well past the check's deadline."""
    executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="health-check")
    loop = asyncio.new_event_loop()
    loop.set_default_executor(executor)
    try:
        return loop.run_until_complete(coro)
    finally:
        try:
            if leftovers := asyncio.all_tasks(loop):
                for task in leftovers:
                    task.cancel()
                loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            executor.shutdown(wait=False, cancel_futures=True)
            loop.close()


def _transport_of(server: Server) -> str:
    return Transport.SSE if server.supported_transports == [Transport.SSE] else Transport.STREAMABLE_HTTP


def check_server(server: Server) -> CheckResult:
    """Probe a `Server` row from sync code (a Celery worker); async callers await `probe` instead."""
    timeout = float(settings.HEALTH_CHECK_TIMEOUT_SECONDS)
    try:
        headers = TARGETS.discovery_headers(server)
    except CredentialMissing as missing:
        return CheckResult(HealthStatus.NEEDS_CONNECTION, str(missing))
    except CredentialUnavailable as unavailable:
        return CheckResult(HealthStatus.UNHEALTHY, str(unavailable)[:DETAIL_MAX_LENGTH])
    return _run(
        probe(server.proxy_pass_url, transport=_transport_of(server), headers=headers, timeout=timeout)
    )


def in_session(server: Server, work, *, timeout: float):
    """`await work(client)` in a session with `server` opened as its check opens one (its discovery
    credential, its transport), from sync code, all of it within `timeout` seconds (TimeoutError)."""
    headers = TARGETS.discovery_headers(server)

    async def session():
        with anyio.fail_after(timeout):
            async with _session(
                server.proxy_pass_url,
                transport=_transport_of(server),
                headers=headers,
                timeout=timeout,
                watch=_HttpWatch(transport=_transport_of(server)),
            ) as client:
                return await work(client)

    return _run(session())


def check_and_record(server_id: int) -> CheckResult | None:
    """Check an enabled server and store the outcome; None (and nothing written) for a missing or
    disabled one, so a queued task for a server disabled or deleted since is harmless."""
    server = Server.objects.enabled().filter(pk=server_id).first()
    if server is None:
        return None
    started = time.perf_counter()
    result = check_server(server)
    duration_ms = (time.perf_counter() - started) * 1000
    server_health_record(server=server, result=result)
    if result.skills is not None and TARGETS.skills_listed is not None:
        TARGETS.skills_listed(server, result.skills)  # the skills app mirrors what changed
    emit(
        MetricType.HEALTH_CHECK,
        duration_ms=duration_ms,
        dimensions={"server": server.path, "status": str(result.status), "num_tools": server.num_tools},
    )
    return result
