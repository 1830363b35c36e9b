"""A virtual server's GET stream: what its members send outside any request (their requests to the
client, list changes, resource updates, log messages) merged into one event stream for the client. The
stream holds one slot of its caller's fair share, and each member's stream one of its origin's
(gateway/fair_share.py).

Each member's session is opened (it is first used now) and its own GET stream read; its events reach the
client whole, renamed by gateway/virtual/asks.py, as they arrive. A member that offers no stream (405) or
cannot be reached is left out; the stream lives while the client keeps it and at least one member's does.
A member's `list_changed` moves the virtual servers' list cache (gateway/virtual/answers.py LISTED) in every
process before it reaches the client, so the client's next list is the member's new one.

A `Last-Event-ID` the merged stream gave names its member: that member's stream is resumed alone."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from django.conf import settings

from core.errors import ErrorCode
from gateway import exchange, fair_share, forwarding, front, headers, sessions, streams, upstream
from gateway.routing import Refusal, Route
from gateway.sign_in import SignInRefused
from gateway.virtual import asks as virtual_asks
from gateway.virtual import members as virtual_members
from servers.upstream_auth import CredentialMissing, CredentialUnavailable
from virtual_servers.cache import VIRTUALS

logger = logging.getLogger(__name__)

LIST_CHANGES = frozenset(
    {
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
    }
)
STREAM_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]


class _Watched(virtual_asks.Outgoing):
    """Renames a member's messages and notes a list change among them."""

    changed = False

    def __call__(self, message):
        if isinstance(message, dict) and message.get("method") in LIST_CHANGES:
            self.changed = True
        return super().__call__(message)


async def listen(scope, receive, send, route: Route, caller) -> None:
    virtual = route.virtual
    last_event_id = headers.first(scope, b"last-event-id")
    if last_event_id:
        return await _resume(receive, send, route, caller, last_event_id)
    async with contextlib.AsyncExitStack() as open_streams:
        open_streams.enter_context(fair_share.slot(sessions.owner(caller.principal), None))
        found = await asyncio.gather(*(_opened(caller, member, open_streams) for member in virtual.members))
        members = [(m, response) for m, response in zip(virtual.members, found, strict=True) if response]
        if not members:
            raise Refusal(
                405,
                ErrorCode.METHOD_NOT_ALLOWED,
                f"No member of {virtual.path} offers a stream now; POST requests.",
                {"Allow": "POST, DELETE"},
            )
        out: asyncio.Queue = asyncio.Queue(maxsize=64)
        readers = [asyncio.create_task(_pump(caller, m, r, virtual.members, out)) for m, r in members]
        start = [*STREAM_HEADERS, (b"mcp-session-id", caller.session_id.encode("latin-1"))]
        await send({"type": "http.response.start", "status": 200, "headers": start})
        relay = asyncio.create_task(_relay(out, send))
        watch = asyncio.create_task(front.disconnected(receive))
        members_done = asyncio.gather(*readers, return_exceptions=True)
        await asyncio.wait({relay, watch, members_done}, return_when=asyncio.FIRST_COMPLETED)
        client_gone = watch.done()
        for task in (*readers, relay, watch):
            task.cancel()
        await asyncio.gather(*readers, relay, watch, members_done, return_exceptions=True)
    if not client_gone:
        while not out.empty():
            await send({"type": "http.response.body", "body": out.get_nowait(), "more_body": True})
        await send({"type": "http.response.body", "body": b""})


def _stream_headers(caller, credential: dict, opened: str) -> dict[str, str]:
    """The headers of a GET for a member's own stream in the caller's session with it."""
    sent = virtual_members.request_headers(caller.record, credential, opened)
    sent.pop("content-type", None)
    return {**sent, "accept": "text/event-stream"}


async def _relay(out: asyncio.Queue, send) -> None:
    while True:
        chunk = await out.get()
        await send({"type": "http.response.body", "body": chunk, "more_body": True})


async def _opened(caller, member, open_streams: contextlib.AsyncExitStack):
    """The member's GET stream for the caller, open; None when it has none or cannot be reached."""
    try:
        credential = await virtual_members.credential(member, caller.principal, caller.epoch)
        opened = await virtual_members.member_session(caller, member, credential)
    except (CredentialMissing, CredentialUnavailable, Refusal) as refused:
        logger.info("A member of %s is left out of its stream: %s", caller.virtual_path, refused)
        return None
    sent = _stream_headers(caller, credential, opened)
    try:
        open_streams.enter_context(fair_share.slot(None, member.server.proxy_pass_url))
    except Refusal as full:
        logger.info("A member of %s is left out of its stream: %s", caller.virtual_path, full.detail)
        return None
    try:
        response = await open_streams.enter_async_context(
            upstream.session().get(
                member.server.proxy_pass_url, headers=sent, timeout=upstream.timeout(), allow_redirects=False
            )
        )
    except upstream.ERRORS as error:
        logger.info("%s opened no stream for %s: %r", member.server.path, caller.virtual_path, error)
        return None
    if response.status != 200 or not response.headers.get("content-type", "").startswith("text/event-stream"):
        return None  # a member without a stream of its own (405) sends nothing outside requests
    return response


async def _pump(caller, member, response, members, out: asyncio.Queue) -> None:
    """One member's stream, its events renamed onto `out`, until it ends."""
    rename = _Watched(member, members)
    reader = streams.EventStream(
        caller.principal,
        member.server.path,
        filtering=True,
        limit=settings.GATEWAY_MAX_REWRITE_BYTES,
        rename=rename,
    )
    try:
        async for chunk in response.content.iter_any():
            events = reader.feed(chunk)
            if rename.changed:  # the client's next list must be the member's new one
                rename.changed = False
                await asyncio.to_thread(VIRTUALS.bump)
            if events:
                await out.put(events)
            if reader.cut:  # an event with no end in sight: the member is hung up on
                response.close()
                break
    except upstream.ERRORS as error:
        logger.info("The stream of %s for %s ended: %r", member.server.path, caller.virtual_path, error)


async def _resume(receive, send, route: Route, caller, last_event_id: str) -> None:
    virtual = route.virtual
    found = virtual_asks.resumed(last_event_id, virtual.members)
    if found is None:
        raise Refusal(400, ErrorCode.BAD_REQUEST, "Last-Event-ID names no stream of this virtual server.")
    member, own = found

    async def attempt(credential: dict[str, str], send) -> None:
        opened = await virtual_members.member_session(caller, member, credential)
        sent = {**_stream_headers(caller, credential, opened), "last-event-id": own}
        outbound = forwarding.Outbound(method="GET", url=member.server.proxy_pass_url, headers=sent, body=b"")
        await forwarding.forward(
            receive,
            forwarding.session_renamed(send, caller.session_id),
            Route(server=member.server, principal=caller.principal),
            outbound,
            None,
            "mcp",
            rename=virtual_asks.Outgoing(member, virtual.members),
        )

    async def over_share(full: Refusal) -> None:
        raise full

    url = member.server.proxy_pass_url
    try:
        await exchange.carried(member.server, caller.principal, caller.epoch, url, attempt, over_share, send)
    except (CredentialMissing, CredentialUnavailable, SignInRefused) as missing:
        if isinstance(missing, SignInRefused):
            missing = missing.missing(member.server)
        raise Refusal(502, ErrorCode.UPSTREAM_UNAVAILABLE, str(missing)) from None
