"""`GET /v0.1/servers` (and `/v0/servers`) answered ahead of Django when the same answer is already known.

Django answers a listing page once; this layer keeps that whole answer (status 200, its headers and body)
per process, keyed by what the answer depends on: the caller's view of the servers and their tools
(the same key as the page itself, catalog/listing.py), the path and query, and the request headers Django
reads for it (Host, Accept, Origin, Accept-Language, the forwarded ones). A later request with the same
key is answered from it, with its own request id, while

- its bearer token's Principal is in the process's verified-token cache under the current auth epoch
  (a revoked token, a changed scope: the entry is missed and Django answers, 401 or the new view);
- the listings' epoch is the one the answer was built under, and the answer is at most ANSWER_SECONDS
  old: the page it holds may itself be LISTING_CHECK_LAG_SECONDS old (servers/cache.py), so the
  `last_checked` of a check that found nothing new (which moves no epoch) shows within 1.5 times that
  (3 s) instead of once (2 s).

Anything else (no bearer token, a cookie, a body, a query past MAX_QUERY_BYTES, a miss) goes to Django,
which does all the checking; answers other than a whole 200 are never kept. The caller's `auth_request`
metric is reported as Django's authentication would report it.
"""

from __future__ import annotations

import time

from accounts.authentication import bearer_of, report_auth_request
from accounts.cache import PRINCIPALS, token_key
from core.epochs import MISSING, epochs_async
from core.request_ids import HEADER as REQUEST_ID_HEADER
from core.request_ids import request_id_for
from servers.cache import LISTING_CHECK_LAG_SECONDS, LISTINGS

PATHS = frozenset({"/v0.1/servers", "/v0/servers"})
MAX_QUERY_BYTES = 512
MAX_BODY_BYTES = 256 * 1024
ANSWER_SECONDS = LISTING_CHECK_LAG_SECONDS / 2
_KEYED_HEADERS = frozenset({b"host", b"accept", b"origin", b"accept-language", b"forwarded"})
_REQUEST_ID = REQUEST_ID_HEADER.lower().encode()


class PageAnswers:
    """Wraps the ASGI app that serves Django (registry_site/asgi.py)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if not _eligible(scope):
            return await self.app(scope, receive, send)
        headers = scope["headers"]
        token = bearer_of(_header(headers, b"authorization"))
        if token is None:
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        auth_epoch, listings_epoch = await epochs_async(PRINCIPALS, LISTINGS)
        principal = PRINCIPALS.get(token_key(token), auth_epoch)
        if principal is not MISSING:
            answer = LISTINGS.get(_key(scope, principal), listings_epoch)
            if answer is not MISSING:
                report_auth_request(started=started, success=True, principal=principal, raw=token)
                return await _replay(send, answer, request_id_for(_header(headers, _REQUEST_ID)))
        recorder = _Recorder(send)
        await self.app(scope, receive, recorder)
        # Kept under the Principal Django verified, only if no epoch moved while it answered.
        if not recorder.whole_200():
            return
        if await epochs_async(PRINCIPALS, LISTINGS) != [auth_epoch, listings_epoch]:
            return
        principal = PRINCIPALS.get(token_key(token), auth_epoch)
        if principal is not MISSING:
            expires_at = time.time() + ANSWER_SECONDS
            LISTINGS.put(_key(scope, principal), recorder.answer(), listings_epoch, expires_at=expires_at)


def _eligible(scope) -> bool:
    return (
        scope["type"] == "http"
        and scope["method"] == "GET"
        and scope["path"] in PATHS
        and len(scope.get("query_string", b"")) <= MAX_QUERY_BYTES
        and not any(
            name in (b"cookie", b"content-length", b"transfer-encoding") for name, _ in scope["headers"]
        )
    )


def _header(headers, name: bytes) -> str:
    for key, value in headers:
        if key == name:
            return value.decode("latin-1")
    return ""


def _key(scope, principal) -> tuple:
    sees_all, paths = principal.server_visibility()
    keyed = tuple(
        sorted(
            (name, value)
            for name, value in scope["headers"]
            if name in _KEYED_HEADERS or name.startswith(b"x-forwarded-")
        )
    )
    return (
        "v01-answer",
        sees_all or paths,
        principal.tools_view(),
        scope.get("scheme", "http"),
        scope["path"],
        scope.get("query_string", b""),
        keyed,
    )


async def _replay(send, answer: tuple[list, bytes], request_id: str) -> None:
    headers, body = answer
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [*headers, (_REQUEST_ID, request_id.encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


class _Recorder:
    """Passes Django's answer on to the client and keeps a copy of a whole 200 that is small enough."""

    def __init__(self, send):
        self.send = send
        self.status = 0
        self.headers: list = []
        self.chunks: list[bytes] = []
        self.size = 0
        self.ended = False

    async def __call__(self, message):
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = [(name, value) for name, value in message["headers"] if name != _REQUEST_ID]
        elif message["type"] == "http.response.body" and self.status == 200:
            self.size += len(message.get("body", b""))
            if self.size <= MAX_BODY_BYTES:
                self.chunks.append(message.get("body", b""))
            self.ended = not message.get("more_body", False)
        await self.send(message)

    def whole_200(self) -> bool:
        return self.status == 200 and self.ended and self.size <= MAX_BODY_BYTES

    def answer(self) -> tuple[list, bytes]:
        return self.headers, b"".join(self.chunks)
