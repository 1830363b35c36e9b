"""The gateway's ASGI application, ahead of Django's middleware in `registry_site/asgi.py`.

`/<server path>/mcp` is authenticated (the same Principal as every surface: registry or identity-provider
bearer token, or a session), authorized message by message, and streamed to the server's
`proxy_pass_url` with the server's own outbound headers in place of the client's credentials.
`Mcp-Session-Id` and `MCP-Protocol-Version` pass through untouched, so sessions live between client and
server and any gateway process serves any request. Anything that is not a gateway path goes to Django.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass
from functools import partial
from http.cookies import SimpleCookie
from urllib.parse import parse_qs

import httpx2
from channels.db import database_sync_to_async
from django.conf import settings
from django.urls import Resolver404, resolve
from rest_framework import exceptions

from accounts.authentication import cached_principal, principal_from_bearer, principal_from_session_key
from accounts.cache import PRINCIPALS
from accounts.principal import Principal
from registry_site.epochs import MISSING, epochs_async
from registry_site.errors import ErrorCode, asgi_error
from registry_site.untrusted import InputRejected, json_loads
from servers.cache import ROUTES
from servers.gateway import handoff, messages, paths, sse_sessions, telemetry, upstream
from servers.models import Server
from servers.selectors import server_for_gateway, server_for_gateway_cached

logger = logging.getLogger(__name__)

CHALLENGE = 'Bearer realm="mcp-gateway-registry"'
METHODS = {"mcp": ("GET", "POST", "DELETE"), "sse": ("GET",), "messages": ("POST",)}
# Request headers a client may send on to the server; everything else (credentials, cookies, hop-by-hop
# headers) stays here. The server's outbound headers are added to these.
FORWARDED_REQUEST_HEADERS = (
    "accept",
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
)
FORWARDED_RESPONSE_HEADERS = ("content-type", "mcp-session-id", "mcp-protocol-version", "cache-control")


@dataclass(frozen=True)
class Route:
    server: Server
    principal: Principal


class Refusal(Exception):
    def __init__(self, status: int, code: ErrorCode | str, detail: str, headers: dict | None = None):
        super().__init__(detail)
        self.status, self.code, self.detail, self.headers = status, code, detail, headers or {}


def _header(scope, name: bytes) -> str:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return ""


class NotOurs(Exception):
    """A path that ends like a gateway path but names no registered server, while Django serves it (the
    edit page of a server whose path is `/mcp`, say)."""


def _bearer(authorization: str) -> str | None:
    scheme, _, token = authorization.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _route(server: Server | None, principal: Principal, candidates: tuple[str, ...]) -> Route:
    if server is None or not server.is_enabled:
        raise Refusal(404, ErrorCode.NOT_FOUND, f"No enabled MCP server at {candidates[0]}.")
    return Route(server=server, principal=principal)


def _cached_route(token: str | None, candidates: tuple[str, ...], epochs) -> Route | None:
    """The route from the per-process caches alone (no database), or None when either misses."""
    if token is None:
        return None
    server = server_for_gateway_cached(candidates, epochs[1])
    if server is MISSING or server is None:
        return None
    principal = cached_principal(token, epochs[0])
    return None if principal is None else _route(server, principal, candidates)


def _resolve(path: str, candidates: tuple[str, ...], authorization: str, cookie: str, epochs) -> Route:
    """The caller, then the server (longest registered prefix, enabled); Refusal otherwise. The caller
    comes first, so an anonymous client cannot tell registered paths from unknown ones."""
    server = server_for_gateway(candidates, epochs[1])
    if server is None:
        try:
            resolve(path)
        except Resolver404:
            pass
        else:
            raise NotOurs
    if token := _bearer(authorization):
        try:
            principal = principal_from_bearer(token, epoch=epochs[0])
        except exceptions.AuthenticationFailed as failed:
            raise Refusal(
                401, failed.get_codes(), str(failed.detail), {"WWW-Authenticate": CHALLENGE}
            ) from None
    else:
        morsel = SimpleCookie(cookie).get(settings.SESSION_COOKIE_NAME) if cookie else None
        principal = principal_from_session_key(morsel.value if morsel else None)
        if principal is None:
            raise Refusal(
                401,
                ErrorCode.NOT_AUTHENTICATED,
                "Authentication credentials were not provided.",
                {"WWW-Authenticate": CHALLENGE},
            )
    return _route(server, principal, candidates)


async def _read_body(receive, limit: int) -> bytes:
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise asyncio.CancelledError  # the client went away before its request was whole
        body += message.get("body", b"")
        if len(body) > limit:
            raise Refusal(413, ErrorCode.PAYLOAD_TOO_LARGE, f"The request body is larger than {limit} bytes.")
        if not message.get("more_body", False):
            return bytes(body)


async def _json(send, status: int, payload) -> None:
    """A JSON answer of the gateway's own (`None`: an empty 202 for notifications only)."""
    body = b"" if payload is None else json.dumps(payload, separators=(",", ":")).encode()
    headers = [(b"content-length", str(len(body)).encode())]
    if body:
        headers.append((b"content-type", b"application/json"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class Gateway:
    """Serves gateway paths; hands every other request to `fallback` (the Django application)."""

    def __init__(self, fallback):
        self.fallback = fallback

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.fallback(scope, receive, send)
        raw_path = scope.get("raw_path") or scope["path"].encode()
        try:
            target = paths.gateway_path(raw_path)
        except paths.PathRefused as refused:
            return await asgi_error(
                send, path=scope["path"], status=400, detail=str(refused), code=ErrorCode.BAD_REQUEST
            )
        if target is None:
            return await self.fallback(scope, receive, send)
        try:
            await self.serve(scope, receive, send, target)
        except NotOurs:
            await self.fallback(scope, receive, send)
        except Refusal as refusal:
            await asgi_error(
                send,
                path=scope["path"],
                status=refusal.status,
                detail=refusal.detail,
                code=refusal.code,
                headers=refusal.headers,
            )
        except asyncio.CancelledError:
            pass  # the client went away; nothing to answer

    async def serve(self, scope, receive, send, target: paths.GatewayPath) -> None:
        method = scope["method"]
        allowed = METHODS[target.endpoint]
        if method not in allowed:
            raise Refusal(
                405,
                ErrorCode.METHOD_NOT_ALLOWED,
                f"{method} is not an MCP method here.",
                {"Allow": ", ".join(allowed)},
            )
        authorization = _header(scope, b"authorization")
        epochs = await epochs_async(PRINCIPALS, ROUTES)
        route = _cached_route(_bearer(authorization), target.candidates, epochs)
        if route is None:
            route = await database_sync_to_async(_resolve)(
                scope["path"], target.candidates, authorization, _header(scope, b"cookie"), epochs
            )
        server_path, principal = route.server.path, route.principal
        url = route.server.proxy_pass_url
        if query := scope.get("query_string", b""):
            url = f"{url}{'&' if '?' in url else '?'}{query.decode('latin-1')}"
        if target.endpoint == "messages":
            session_id = (
                parse_qs(scope.get("query_string", b"").decode("latin-1")).get("session_id") or [""]
            )[0]
            url = await sse_sessions.upstream_endpoint(server_path, session_id)
            if url is None:
                raise Refusal(404, ErrorCode.NOT_FOUND, "No SSE session of this server has that session_id.")
        checked = None
        body = b""
        if method == "POST":
            raw = await _read_body(receive, settings.MAX_REQUEST_BODY_BYTES)
            try:
                checked = messages.check_body(json_loads(raw), principal, server_path)
            except InputRejected as rejected:
                code = messages.PARSE_ERROR if rejected.unparsable else messages.INVALID_REQUEST
                return await _json(send, 400, messages.error_message(None, code, str(rejected)))
            except messages.BodyRefused as refused:
                return await _json(send, 400, messages.error_message(None, refused.code, str(refused)))
            if target.endpoint == "messages" and checked.denied:
                # SSE transport: answers travel on a stream another process may hold, so a denied request
                # goes to the server as a method it does not have; its error answers the same id there.
                checked.forward += [messages.stand_in(denied) for denied in checked.denied]
                checked.denied = []
            if not checked.forward:
                if not checked.denied:
                    return await _json(send, 202, None)
                return await _json(send, 200, checked.denied if checked.batch else checked.denied[0])
            body = checked.forward_body()
        else:
            if not principal.allows_mcp(server_path, "initialize"):
                raise Refusal(
                    403,
                    ErrorCode.PERMISSION_DENIED,
                    f"'{principal.username}' may not use server '{server_path}'.",
                )
            if target.endpoint == "sse":
                checked = messages.stream_checks()
        offered = handoff.offered(_header(scope, handoff.HEADER))
        if handoff.can_hand_off(route.server, offered, target.endpoint, checked):
            tool = checked.calls[0][1] if checked is not None and checked.calls else None
            headers = handoff.redirect_headers(route.server, scope.get("query_string", b""), principal, tool)
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            return await send({"type": "http.response.body", "body": b""})
        await self.forward(scope, receive, send, route, method, url, body, checked, target.endpoint)

    async def forward(self, scope, receive, send, route: Route, method, url, body, checked, endpoint) -> None:
        headers = {
            name: value for name in FORWARDED_REQUEST_HEADERS if (value := _header(scope, name.encode()))
        }
        headers.update(route.server.headers or {})
        http = upstream.client()
        request = http.build_request(
            method, url, headers=headers, content=body or None, timeout=upstream.timeout()
        )
        answered = asyncio.Event()  # set once the whole answer is sent: a disconnect after it is no loss
        relay = asyncio.create_task(
            self.relay(http, request, _Sender(send, answered), route, checked, endpoint)
        )
        watch = asyncio.create_task(_disconnected(receive))
        done, _ = await asyncio.wait({relay, watch}, return_when=asyncio.FIRST_COMPLETED)
        watch.cancel()
        if relay not in done and not answered.is_set():
            relay.cancel()  # the client went away mid-answer: stop reading from the server
            return
        await relay  # a Refusal raised before the answer started is answered by the caller

    async def relay(self, http, request, send, route: Route, checked, endpoint: str) -> None:
        started = time.perf_counter()
        try:
            response = await http.send(request, stream=True)
        except httpx2.TimeoutException:
            raise Refusal(
                504,
                ErrorCode.UPSTREAM_TIMEOUT,
                f"The MCP server at {route.server.path} did not answer in time.",
            ) from None
        except httpx2.HTTPError as exc:
            raise Refusal(
                502,
                ErrorCode.UPSTREAM_UNAVAILABLE,
                f"The MCP server at {route.server.path} could not be reached ({type(exc).__name__}).",
            ) from None
        try:
            sent, failed = await self.answer(response, send, route, checked, endpoint)
        finally:
            await response.aclose()
        if checked is not None and checked.calls:
            await self.measure(request, response, checked, started, sent, failed)

    async def answer(self, response, send, route: Route, checked, endpoint: str) -> tuple[int, set]:
        """Stream the server's answer to the client (tool lists filtered, denials added); returns the bytes
        sent and the ids the server answered with errors."""
        principal, server_path = route.principal, route.server.path
        content_type = response.headers.get("content-type", "")
        status = response.status_code
        headers = [
            (name.encode(), response.headers[name].encode("latin-1"))
            for name in FORWARDED_RESPONSE_HEADERS
            if name in response.headers
        ]
        if checked is not None and content_type.startswith("application/json"):
            body, failed = messages.merged_json(await response.aread(), checked, principal, server_path)
            headers.append((b"content-length", str(len(body)).encode()))
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return len(body), failed
        if checked is not None and checked.denied and status == 202:
            await _json(send, 200, checked.denied if checked.batch else checked.denied[0])
            return 0, set()
        reader = None
        if checked is not None and content_type.startswith("text/event-stream"):
            rewrite = None
            if endpoint == "sse":
                stream_url = route.server.proxy_pass_url
                rewrite = partial(sse_sessions.rewrite_endpoint, server_path, stream_url)
            reader = messages.SseRewriter(checked, principal, server_path, endpoint=rewrite)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        sent = 0
        async for chunk in response.aiter_bytes():
            out = reader.feed(chunk) if reader else chunk
            if out:
                sent += len(out)
                await send({"type": "http.response.body", "body": out, "more_body": True})
        tail = reader.close() if reader else b""
        if reader and checked.denied:
            tail += b"".join(messages.sse_event(denied) for denied in checked.denied)
        await send({"type": "http.response.body", "body": tail})
        return sent + len(tail), reader.failed if reader else set()

    async def measure(self, request, response, checked, started, sent: int, failed: set) -> None:
        """tool_execution and protocol_latency metrics of one proxied POST (servers/gateway/telemetry.py)."""
        http_ok = response.status_code < 400
        session_id = response.headers.get("mcp-session-id") or request.headers.get("mcp-session-id")
        client_name = checked.client_name
        if session_id and http_ok and any(method == "initialize" for method, _ in checked.calls):
            await telemetry.session_started(session_id, client_name)
        elif not client_name:
            client_name = await telemetry.session_client(session_id)
        await telemetry.report(
            session_id=session_id,
            client_name=client_name,
            calls=checked.calls,
            failed_ids=failed,
            call_ids=checked.call_ids,
            started=started,
            input_bytes=len(request.content or b""),
            output_bytes=sent,
            http_ok=http_ok,
        )


class _Sender:
    """The ASGI `send` of a request, noting when the last body message has gone out."""

    def __init__(self, send, answered: asyncio.Event):
        self.send, self.answered = send, answered

    async def __call__(self, message) -> None:
        await self.send(message)
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            self.answered.set()


async def _disconnected(receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
