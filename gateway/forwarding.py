"""Carrying a checked request to its server and the answer back to the client, streamed both ways: tool
lists cut to the caller's tools and denied calls answered on the way (gateway/messages.py), the
upstream exchange stopped when the client goes away, and the gateway's metrics reported once the answer is
out (gateway/telemetry.py)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass
from functools import partial

from django.conf import settings

from core.errors import ErrorCode
from gateway import front, headers, messages, sessions, streams, telemetry, tracing, upstream
from gateway.routing import Refusal, Route
from gateway.sign_in import sign_in_refused

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outbound:
    """The request as it goes to the server."""

    method: str
    url: str
    headers: dict[str, str]
    body: bytes


async def json_answer(send, status: int, payload, extra: dict[str, str] | None = None) -> None:
    """A JSON answer of the gateway's own (`None`: an empty 202 for notifications only)."""
    body = b"" if payload is None else json.dumps(payload, separators=(",", ":")).encode()
    headers = [(b"content-length", str(len(body)).encode())]
    headers += [(name.encode("latin-1"), value.encode("latin-1")) for name, value in (extra or {}).items()]
    if body:
        headers.append((b"content-type", b"application/json"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def session_renamed(send, session_id: str | None):
    """`send`, naming the gateway's session in the answer where the server named its own (a session the
    gateway opened for the client: gateway/deferred.py, gateway/virtual/answers.py); None names none (a
    2026-07-28 client has no session)."""
    ours = [(b"mcp-session-id", session_id.encode("latin-1"))] if session_id else []

    async def sending(message):
        if message["type"] == "http.response.start":
            kept = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"mcp-session-id"]
            message = {**message, "headers": [*kept, *ours]}
        await send(message)

    return sending


def headers_added(send, extra: dict[str, str]):
    """`send`, adding `extra` to the answer's headers (the RateLimit headers of an allowed call)."""
    if not extra:
        return send
    added = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in extra.items()]

    async def sending(message):
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *added]}
        await send(message)

    return sending


async def forward(
    receive, send, route: Route, outbound: Outbound, checked, endpoint: str, opened=None, rename=None
) -> None:
    """Relay the exchange while watching the client; a client that leaves mid-answer stops it. `opened`
    (a GET stream's, gateway/ordering.py) is set once the server has answered with its headers; `rename`
    (a virtual server's member: gateway/virtual/asks.py) renames what its event streams carry."""
    sender = _Sender(send)
    relay = asyncio.create_task(_relay(sender, route, outbound, checked, endpoint, opened, rename))
    watch = asyncio.create_task(front.disconnected(receive))
    done, _ = await asyncio.wait({relay, watch}, return_when=asyncio.FIRST_COMPLETED)
    watch.cancel()
    if relay not in done and not sender.answered:
        relay.cancel()  # the client went away mid-answer: stop reading from the server
        await asyncio.gather(relay, return_exceptions=True)
        await _report(route, outbound, checked, sender)  # what it was answered still counts
        return
    await relay  # a Refusal raised before the answer started is answered by the caller
    await _report(route, outbound, checked, sender)


async def _relay(
    send: _Sender, route: Route, outbound: Outbound, checked, endpoint: str, opened, rename
) -> None:
    try:
        async with upstream.session().request(
            outbound.method,
            outbound.url,
            headers=outbound.headers,
            data=outbound.body or None,
            timeout=upstream.timeout(),
            allow_redirects=False,
        ) as response:
            if refused := sign_in_refused(route.server, response):
                raise refused
            if opened is not None:
                opened.set()
            send.status = response.status
            send.session_id = response.headers.get("mcp-session-id") or outbound.headers.get("mcp-session-id")
            await _answer(response, send, route, checked, endpoint, rename)
    except upstream.ERRORS as error:
        if send.started:  # the answer is under way: end it, the client sees a cut stream
            logger.warning("The MCP server at %s broke off its answer (%r).", route.server.path, error)
            if not send.answered:
                await send({"type": "http.response.body", "body": b""})
            return
        if upstream.is_timeout(error):
            raise Refusal(
                504,
                ErrorCode.UPSTREAM_TIMEOUT,
                f"The MCP server at {route.server.path} did not answer in time.",
            ) from None
        raise Refusal(
            502,
            ErrorCode.UPSTREAM_UNAVAILABLE,
            f"The MCP server at {route.server.path} could not be reached ({type(error).__name__}).",
        ) from None


async def _answer(response, send: _Sender, route: Route, checked, endpoint: str, rename=None) -> None:
    """Stream the server's answer to the client (tool lists filtered, denials added), noting on `send`
    the ids the server answered with errors. Only what must change is read whole, and only up
    to GATEWAY_MAX_REWRITE_BYTES; everything else goes on as it arrives."""
    principal, server_path = route.principal, route.server.path
    content_type = response.headers.get("content-type", "")
    status = response.status
    answer_headers = headers.forwarded_response_headers(response.headers)
    session_id = response.headers.get("mcp-session-id")
    if checked is not None and checked.opens_session and session_id and status < 400:
        await sessions.bind(server_path, session_id, principal)  # before the client can use it
    filtering = checked is None or checked.rewrites or endpoint != "mcp" or rename is not None
    limit = settings.GATEWAY_MAX_REWRITE_BYTES
    if content_type.startswith("application/json") and filtering:
        body = await upstream.read_bounded(response, limit)
        denied = checked.denied if checked is not None else []
        try:
            if body is None:
                raise messages.Unfilterable(
                    f"The server's answer is larger than the gateway's limit of {limit} bytes "
                    "for answers it filters."
                )
            answered = body
            body, send.scan.failed = messages.merged_json(body, denied, principal, server_path, rename)
            if send.scan.failed or (checked is not None and checked.trace is not None):  # read again: rare
                send.scan.outcomes = tracing.outcomes(messages.decoded(answered))
        except messages.Unfilterable as unfilterable:
            text = str(unfilterable) or "The server's answer could not be read to filter it."
            if checked is None:
                raise Refusal(502, ErrorCode.UPSTREAM_UNAVAILABLE, text) from None
            errors = messages.unanswered(checked, text)
            await json_answer(send, 200, errors if checked.batch else (errors[0] if errors else None))
            return
        answer_headers = [(k, v) for k, v in answer_headers if k != b"content-length"]
        answer_headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": answer_headers})
        await send({"type": "http.response.body", "body": body})
        return
    if checked is not None and checked.denied and status == 202:
        await json_answer(send, 200, checked.denied if checked.batch else checked.denied[0])
        return
    reader = None
    if content_type.startswith("text/event-stream"):
        rewrite = None
        if endpoint == "sse":
            rewrite = partial(sessions.rewrite_endpoint, server_path, route.server.proxy_pass_url, principal)
        reader = streams.EventStream(
            principal, server_path, filtering=filtering, limit=limit, endpoint=rewrite, rename=rename
        )
    elif content_type.startswith("application/json"):
        reader = _JsonScan()
    if reader is not None:
        send.scan = reader  # the ids it finds failed count in the metrics, even if the client leaves
    await send({"type": "http.response.start", "status": status, "headers": answer_headers})
    async for chunk in response.content.iter_any():
        out = reader.feed(chunk) if reader else chunk
        if out:
            await send({"type": "http.response.body", "body": out, "more_body": True})
        if getattr(reader, "cut", False):  # an event with no end in sight: the server is hung up on
            response.close()
            break
    tail = reader.close() if reader else b""
    if checked is not None and checked.denied:
        tail += b"".join(streams.sse_event(denied) for denied in checked.denied)
    await send({"type": "http.response.body", "body": tail})


class _JsonScan:
    """A JSON answer passed on unchanged as it arrives; read at its end for failed ids when small."""

    def __init__(self):
        self.head = bytearray()
        self.failed: set = set()
        self.outcomes: dict = {}

    def feed(self, chunk: bytes) -> bytes:
        if len(self.head) <= streams.SCAN_LIMIT:
            self.head += chunk
        return chunk

    def close(self) -> bytes:
        if len(self.head) <= streams.SCAN_LIMIT:
            answer = messages.decoded(bytes(self.head))
            if answer is not messages.UNREADABLE:
                self.failed = messages.failed_ids(answer)
                self.outcomes = tracing.outcomes(answer)
        return b""


async def _report(route: Route, outbound: Outbound, checked, sender: _Sender) -> None:
    """tool_execution and protocol_latency metrics of one proxied POST (gateway/telemetry.py), once its
    answer is out or its client has left; nothing when the server never answered."""
    if checked is not None and checked.trace is not None:
        failure = str(sender.status) if sender.status is not None and sender.status >= 400 else None
        tracing.ended_all(checked.trace, sender.scan.outcomes, failure)
    if checked is None or not checked.calls or sender.status is None:
        return
    session_id, http_ok = sender.session_id, sender.status < 400
    client_name = checked.client_name
    if session_id and http_ok and any(method == "initialize" for method, _ in checked.calls):
        await telemetry.session_started(session_id, client_name)
    elif not client_name:
        client_name = await telemetry.session_client(session_id)
    await telemetry.report(
        server_path=route.server.path,
        session_id=session_id,
        client_name=client_name,
        calls=checked.calls,
        failed_ids=sender.scan.failed,
        outcomes=sender.scan.outcomes,
        call_ids=checked.call_ids,
        received=checked.received_at,
        started=sender.created,
        input_bytes=len(outbound.body),
        output_bytes=sender.sent,
        http_ok=http_ok,
    )


class _Scan:
    failed: set = frozenset()
    outcomes: dict = {}  # noqa: RUF012 - never written: a reader replaces it


class _Sender:
    """The ASGI `send` of a request, noting what the metrics need: when the answer started and ended,
    the bytes sent, the server's status and session, and what read the answer for failed ids."""

    def __init__(self, send):
        self.send = send
        self.started = self.answered = False
        self.created = time.perf_counter()
        self.sent = 0
        self.status: int | None = None
        self.session_id: str | None = None
        self.scan = _Scan()

    async def __call__(self, message) -> None:
        await self.send(message)
        if message["type"] == "http.response.start":
            self.started = True
        else:
            self.sent += len(message.get("body", b""))
            if not message.get("more_body", False):
                self.answered = True
