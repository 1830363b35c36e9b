"""The ASGI door of both services: what must be refused before Django reads a byte of the request.

- Bodies over the service's limit answer 413 without being read past it: at once by `Content-Length`,
  and by counting the chunks of a body sent without one. Django's ASGI handler would otherwise spool a
  1 GiB body to disk before any view could refuse it.
- A query string that is not UTF-8 answers a JSON 400 (Django answers those with an HTML page).

Everything after that (unstorable text, JSON depth) is the shared rule of `core.untrusted`.
"""

from __future__ import annotations

from collections.abc import Callable

from core.errors import ErrorCode, asgi_error


async def _answer(send, path: str, status: int, detail: str, code: str) -> None:
    await asgi_error(
        send, path=path, status=status, detail=detail, code=code, headers={"Connection": "close"}
    )


class RequestGuard:
    """Wraps an ASGI app; `max_body` gives the byte limit (read from settings on each request, so tests
    and deployments can change it)."""

    def __init__(self, app, *, max_body: Callable[[], int]):
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope.get("path", "")
        try:
            bytes(scope.get("query_string", b"")).decode("utf-8")
        except UnicodeDecodeError:
            return await _answer(
                send, path, 400, "The query string is not valid UTF-8.", ErrorCode.BAD_REQUEST
            )
        limit = self.max_body()
        too_large = f"The request body is larger than {limit} bytes."
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None:
            if not declared.isdigit():
                return await _answer(
                    send, path, 400, "Content-Length is not a number.", ErrorCode.BAD_REQUEST
                )
            if int(declared) > limit:
                return await _answer(send, path, 413, too_large, ErrorCode.PAYLOAD_TOO_LARGE)
        # Read the body here, counting: Django reads it whole before the view anyway, so holding it costs
        # nothing more, and a body without Content-Length stops being read at the limit.
        messages, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                messages.append(message)
                break
            size += len(message.get("body", b""))
            if size > limit:
                return await _answer(send, path, 413, too_large, ErrorCode.PAYLOAD_TOO_LARGE)
            messages.append(message)
            if not message.get("more_body", False):
                break

        async def replay():
            return messages.pop(0) if messages else await receive()

        return await self.app(scope, replay, send)
