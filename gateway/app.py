"""The gateway's ASGI application, ahead of Django's middleware in `registry_site/asgi.py`.

`/<server path>/mcp` is authenticated (the same Principal as every surface: registry or identity-provider
bearer token, or a session), authorized message by message, and streamed to the server's
`proxy_pass_url` with the server's own outbound headers in place of the client's credentials.
`Mcp-Session-Id` and `MCP-Protocol-Version` pass through untouched, so sessions live between client and
server and any gateway process serves any request. Anything that is not a gateway path goes to Django.
"""

from __future__ import annotations

import asyncio
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from django.conf import settings

from accounts.cache import PRINCIPALS
from gateway import forwarding, handoff, messages, paths, routing, sse_sessions
from registry_site.epochs import epochs_async
from registry_site.errors import ErrorCode, asgi_error
from registry_site.untrusted import InputRejected, json_loads
from servers.cache import ROUTES

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


def _header(scope, name: bytes) -> str:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return ""


async def _read_body(receive, limit: int) -> bytes:
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise asyncio.CancelledError  # the client went away before its request was whole
        body += message.get("body", b"")
        if len(body) > limit:
            raise routing.Refusal(
                413, ErrorCode.PAYLOAD_TOO_LARGE, f"The request body is larger than {limit} bytes."
            )
        if not message.get("more_body", False):
            return bytes(body)


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
        except routing.NotOurs:
            await self.fallback(scope, receive, send)
        except routing.Refusal as refusal:
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
            raise routing.Refusal(
                405,
                ErrorCode.METHOD_NOT_ALLOWED,
                f"{method} is not an MCP method here.",
                {"Allow": ", ".join(allowed)},
            )
        authorization = _header(scope, b"authorization")
        epochs = await epochs_async(PRINCIPALS, ROUTES)
        route = routing.cached_route(routing.bearer(authorization), target.candidates, epochs)
        if route is None:
            route = await database_sync_to_async(routing.resolve_route)(
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
                raise routing.Refusal(
                    404, ErrorCode.NOT_FOUND, "No SSE session of this server has that session_id."
                )
        checked = None
        body = b""
        if method == "POST":
            raw = await _read_body(receive, settings.MAX_REQUEST_BODY_BYTES)
            try:
                checked = messages.check_body(json_loads(raw), principal, server_path)
            except InputRejected as rejected:
                code = messages.PARSE_ERROR if rejected.unparsable else messages.INVALID_REQUEST
                return await forwarding.json_answer(
                    send, 400, messages.error_message(None, code, str(rejected))
                )
            except messages.BodyRefused as refused:
                return await forwarding.json_answer(
                    send, 400, messages.error_message(None, refused.code, str(refused))
                )
            if target.endpoint == "messages" and checked.denied:
                # SSE transport: answers travel on a stream another process may hold, so a denied request
                # goes to the server as a method it does not have; its error answers the same id there.
                checked.forward += [messages.stand_in(denied) for denied in checked.denied]
                checked.denied = []
            if not checked.forward:
                if not checked.denied:
                    return await forwarding.json_answer(send, 202, None)
                return await forwarding.json_answer(
                    send, 200, checked.denied if checked.batch else checked.denied[0]
                )
            body = checked.forward_body()
        else:
            if not principal.allows_mcp(server_path, "initialize"):
                raise routing.Refusal(
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
        headers = {
            name: value for name in FORWARDED_REQUEST_HEADERS if (value := _header(scope, name.encode()))
        }
        headers.update(route.server.headers or {})
        outbound = forwarding.Outbound(method=method, url=url, headers=headers, body=body)
        await forwarding.forward(receive, send, route, outbound, checked, target.endpoint)
