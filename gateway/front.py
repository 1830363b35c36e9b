"""The ASGI shell every kind of gateway target shares (servers and virtual servers: gateway/app.py; A2A
agents: gateway/a2a/app.py): the path read on its raw bytes (400 when it could name more than one
thing), CORS for allowed origins (a preflight answered before any credential is looked at), and one
answer, in the one error format, for a refusal, for Redis that cannot say whose a session or task is,
and for a client gone. What a kind parses, serves and challenges with is its own."""

from __future__ import annotations

import asyncio

from core.errors import ErrorCode, asgi_error
from gateway import headers, paths, pins_seen, routing, sessions, tracing


async def read_body(receive, limit: int) -> bytes:
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


async def disconnected(receive) -> None:
    """Returns when the client has gone (an answer's watcher: the exchange behind it ends too)."""
    while (await receive())["type"] != "http.disconnect":
        pass


class Front:
    """Serves the paths `target` recognises; hands every other request to `fallback`."""

    unavailable = "The gateway cannot check sessions now (Redis is unavailable); try again."

    def __init__(self, fallback):
        self.fallback = fallback

    def target(self, raw_path: bytes):
        """What the path names, or None when it is not this front's (PathRefused when ambiguous)."""
        raise NotImplementedError

    def methods(self, target) -> tuple[str, ...]:
        """The HTTP methods a preflight for `target` is told."""
        raise NotImplementedError

    def challenge(self, scope, target, refusal: routing.Refusal) -> dict[str, str]:
        """Headers a refusal adds (WWW-Authenticate)."""
        return {}

    async def serve(self, scope, receive, send, target) -> None:
        raise NotImplementedError

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.fallback(scope, receive, send)
        try:
            target = self.target(scope.get("raw_path") or scope["path"].encode())
        except paths.PathRefused as refused:
            return await asgi_error(
                send, path=scope["path"], status=400, detail=str(refused), code=ErrorCode.BAD_REQUEST
            )
        if target is None:
            return await self.fallback(scope, receive, send)
        send = pins_seen.settling(send, pins_seen.watching())  # an answer that withheld a tool waits
        if origin := headers.cors_origin(scope):
            if scope["method"] == "OPTIONS":
                return await _preflight(send, scope, origin, self.methods(target))
            send = _with_headers(send, headers.cors_headers(origin))
        try:
            await self.serve(scope, receive, send, target)
        except routing.NotOurs:
            await self.fallback(scope, receive, send)
        except sessions.SessionsUnavailable:
            await asgi_error(
                send,
                path=scope["path"],
                status=503,
                detail=self.unavailable,
                code=ErrorCode.REDIS_UNAVAILABLE,
                headers={"Retry-After": "5"},
            )
        except routing.Refusal as refusal:
            tracing.refused_request(scope, refusal.status, str(refusal.code), refusal.detail)
            await asgi_error(
                send,
                path=scope["path"],
                status=refusal.status,
                detail=refusal.detail,
                code=refusal.code,
                headers={**refusal.headers, **self.challenge(scope, target, refusal)},
            )
        except asyncio.CancelledError:
            pass  # the client went away; nothing to answer


async def _preflight(send, scope, origin: str, methods: tuple[str, ...]) -> None:
    """A CORS preflight from an allowed origin, answered before any credential is looked at."""
    answer = headers.preflight_headers(scope, origin, methods)
    await send({"type": "http.response.start", "status": 204, "headers": answer})
    await send({"type": "http.response.body", "body": b""})


def _with_headers(send, extra: list[tuple[bytes, bytes]]):
    """`send`, adding `extra` to the start of the answer (CORS headers of an allowed origin)."""

    async def sending(message):
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return sending
