"""The SSE transport (2024-11-05) for a virtual server: `GET /<path>/sse` opens the stream, whose first event
names `/<path>/messages/?session_id=<id>`; each POST there is answered 202 at once and its answers travel
on the stream, as that transport has it.

The gateway is the server here, and the stream may be held by another web process than the one a POST
reaches: a POST's answers go to the holder through the channel layer (Redis), to the channel the holder
named when it opened the stream (kept in Redis with the caller it belongs to, like any session). The POST's
requests are answered as on streamable HTTP (gateway/virtual/answers.py), in a task of their own, so a call
that waits for the client (a member's sampling or elicitation request, which reaches the client on the stream)
never holds up the POST that carries the client's answer. The virtual session behind the stream is the one
its `initialize` opened; the stream also carries the members' own streams (gateway/virtual/streams.py),
and its end ends the session and the members' sessions."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from urllib.parse import parse_qs

import redis
from channels.layers import get_channel_layer

from core.errors import ErrorCode
from gateway import forwarding, front, jsonrpc, sessions, streams
from gateway.routing import Refusal, Route
from gateway.virtual import answers as virtual
from gateway.virtual import sessions as virtual_sessions
from gateway.virtual import streams as virtual_streams
from gateway.virtual.members import Caller

logger = logging.getLogger(__name__)

PREFIX = "registry-virtual-sse-"
STREAM_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
_RUNNING: set[asyncio.Task] = set()  # POSTs' answers still being made (held so they are not collected)


async def _binding(virtual_path: str, stream_id: str) -> dict | None:
    return await sessions.record(sessions.Kind.VIRTUAL_SSE, virtual_path, stream_id, renew=True)


async def _bind(virtual_path: str, stream_id: str, binding: dict) -> None:
    await sessions.keep(sessions.Kind.VIRTUAL_SSE, virtual_path, stream_id, binding)


async def listen(scope, receive, send, route: Route, epochs) -> None:
    """The stream: the endpoint event, then every answer and member event for it until the client leaves."""
    virtual, principal = route.virtual, route.principal
    layer = get_channel_layer()
    channel = await layer.new_channel()
    stream_id = PREFIX + secrets.token_urlsafe(24)
    await _bind(virtual.path, stream_id, {"owner": sessions.owner(principal), "channel": channel})
    await send({"type": "http.response.start", "status": 200, "headers": STREAM_HEADERS})
    endpoint = f"event: endpoint\ndata: {virtual.path}/messages/?session_id={stream_id}\n\n"
    await send({"type": "http.response.body", "body": endpoint.encode(), "more_body": True})
    members: asyncio.Task | None = None
    session_id = None
    watch = asyncio.create_task(front.disconnected(receive))
    try:
        while True:
            got = asyncio.create_task(layer.receive(channel))
            await asyncio.wait({got, watch}, return_when=asyncio.FIRST_COMPLETED)
            if watch.done():
                got.cancel()
                break
            try:
                message = got.result()
            except (redis.RedisError, OSError) as error:  # the channel layer is gone: so is the stream
                logger.warning("The SSE stream of %s lost its channel: %r", virtual.path, error)
                break
            if message.get("session") and members is None:
                session_id = message["session"]
                caller = await _caller(virtual, principal, epochs, session_id)
                if caller is not None:
                    members = asyncio.create_task(_members(scope, route, caller, send))
            if message.get("body"):
                await send({"type": "http.response.body", "body": message["body"], "more_body": True})
    finally:
        for task in (watch, members):
            if task is not None:
                task.cancel()
        await _ended(virtual, principal, epochs, stream_id, session_id)


async def post(scope, send, route: Route, checked, answered, epochs) -> None:
    """A POST to the stream's endpoint: 202, its answers to the stream. `answered`: (status, payload) when
    the gateway answered the POST's messages itself (denials), else None."""
    virtual, principal = route.virtual, route.principal
    query = scope.get("query_string", b"").decode("latin-1")
    stream_id = (parse_qs(query).get("session_id") or [""])[0]
    binding = await _binding(virtual.path, stream_id) if stream_id.startswith(PREFIX) else None
    if binding is None or binding["owner"] != sessions.owner(principal):
        raise Refusal(404, ErrorCode.NOT_FOUND, "No SSE session of this server has that session_id.")
    if answered is not None and answered[0] != 200:
        return await forwarding.json_answer(send, *answered)
    if answered is not None:
        payload = answered[1] if isinstance(answered[1], list) else [answered[1]]
        await _to_stream(binding["channel"], b"".join(streams.sse_event(m) for m in payload))
    else:
        task = asyncio.create_task(_answer(scope, route, checked, binding, stream_id, epochs))
        _RUNNING.add(task)
        task.add_done_callback(_RUNNING.discard)
    await forwarding.json_answer(send, 202, None)


async def _answer(scope, route: Route, checked, binding: dict, stream_id: str, epochs) -> None:
    """The POST's messages answered as on streamable HTTP, each answer sent to the stream as it comes."""
    relay = _Relay(route.virtual.path, stream_id, binding)
    try:
        await virtual.answer(scope, _never, relay, route, checked, "POST", binding.get("session"), epochs)
        await relay.flush()
    except Refusal as refusal:
        await _failed(checked, binding, refusal.detail)
    except Exception:  # the client is told, never left waiting for an answer
        logger.exception("An answer for the SSE stream of %s failed", route.virtual.path)
        with contextlib.suppress(Exception):
            await _failed(checked, binding, "The gateway could not answer this request.")


async def _failed(checked, binding: dict, text: str) -> None:
    """An error on the stream for each request of the POST whose answer could not be made."""
    requests = [m for m in checked.forward if "id" in m and "method" in m]
    errors = [jsonrpc.error_message(m["id"], jsonrpc.INTERNAL_ERROR, text) for m in requests]
    await _to_stream(binding["channel"], b"".join(streams.sse_event(error) for error in errors))


class _Relay:
    """An ASGI `send` whose answer goes to the stream: a JSON answer as one event per message, an event
    stream's events as they arrive (their data alone: the SSE transport's events have no ids)."""

    def __init__(self, virtual_path: str, stream_id: str, binding: dict):
        self.virtual_path, self.stream_id, self.binding = virtual_path, stream_id, binding
        self.events, self.body = False, bytearray()

    async def __call__(self, message) -> None:
        if message["type"] == "http.response.start":
            found = dict(message.get("headers", []))
            self.events = found.get(b"content-type", b"").startswith(b"text/event-stream")
            opened = found.get(b"mcp-session-id")
            if opened and not self.binding.get("session"):  # initialize: the stream's session from now on
                self.binding = {**self.binding, "session": opened.decode("latin-1")}
                await _bind(self.virtual_path, self.stream_id, self.binding)
                await _to_stream(self.binding["channel"], b"", session=self.binding["session"])
            return
        self.body += message.get("body", b"")
        if self.events:
            whole, _, rest = bytes(self.body).rpartition(b"\n\n")
            self.body = bytearray(rest)
            if whole:
                await _to_stream(self.binding["channel"], _data_events(whole + b"\n\n"))
        elif not message.get("more_body"):
            await self.flush()

    async def flush(self) -> None:
        if self.events or not self.body.strip():
            return
        payload = json.loads(bytes(self.body))
        self.body = bytearray()
        payload = payload if isinstance(payload, list) else [payload]
        await _to_stream(self.binding["channel"], b"".join(streams.sse_event(m) for m in payload))


def _data_events(events: bytes) -> bytes:
    """Streamable HTTP events as the SSE transport's: each event's data, the ones without any left out."""
    out = []
    for data in streams.events_data(events):
        if data.strip():
            out.append(b"event: message\ndata: " + data.replace(b"\n", b"\ndata: ") + b"\n\n")
    return b"".join(out)


async def _to_stream(channel: str, body: bytes, session: str | None = None) -> None:
    if body or session:
        await get_channel_layer().send(channel, {"type": "virtual.sse", "body": body, "session": session})


async def _members(scope, route: Route, caller: Caller, send) -> None:
    """The members' own streams, merged, onto this stream (their events only)."""

    async def events_only(message):
        if message["type"] == "http.response.body" and (events := _data_events(message.get("body", b""))):
            await send({"type": "http.response.body", "body": events, "more_body": True})

    with contextlib.suppress(Refusal):
        await virtual_streams.listen({**scope, "headers": []}, _never, events_only, route, caller)


async def _caller(virtual_server, principal, epochs, session_id: str) -> Caller | None:
    record = await virtual_sessions.load(virtual_server.path, session_id)
    return Caller(principal, epochs, virtual_server.path, session_id, record) if record is not None else None


async def _ended(virtual_server, principal, epochs, stream_id: str, session_id: str | None) -> None:
    """The stream is gone: so are its binding and its session with the members."""
    if session_id is None:  # an initialize answered as the stream ended
        with contextlib.suppress(sessions.SessionsUnavailable):
            session_id = (await _binding(virtual_server.path, stream_id) or {}).get("session")
    await sessions.forget(sessions.Kind.VIRTUAL_SSE, virtual_server.path, stream_id)
    caller = await _caller(virtual_server, principal, epochs, session_id) if session_id else None
    if caller is not None:
        await virtual.close(caller, virtual_server)


async def _never():
    await asyncio.Event().wait()
