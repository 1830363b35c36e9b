"""The gateway speaking to a virtual server's members for a caller: each member's session opened on first
use with the caller's own credential for that server (the client's `initialize` replayed,
gateway/deferred.py), one request sent and its answer read (a JSON answer or an event stream), and whole
lists gathered page by page. A member that cannot answer raises MemberFailed, whose text names it."""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from dataclasses import dataclass

from django.conf import settings

from connections.resolver import gateway_headers
from gateway import deferred, exchange, jsonrpc, streams, upstream
from gateway.epochs import Epochs
from gateway.routing import Refusal
from gateway.sign_in import SignInRefused, sign_in_refused
from gateway.virtual import sessions as virtual_sessions
from servers.upstream_auth import CredentialMissing, CredentialUnavailable

logger = logging.getLogger(__name__)

PAGE_LIMIT = 20  # pages of one member's list followed at most
_OPENING: dict[tuple, asyncio.Lock] = {}  # (virtual path, session, member key) being opened now
_TELLING: set[asyncio.Task] = set()  # cancellations on their way to members, held until sent


@dataclass
class Caller:
    """A caller in one virtual session: who, the cache epochs of the request (gateway/epochs.py), and the
    session's record."""

    principal: object
    epochs: Epochs
    virtual_path: str
    session_id: str
    record: dict
    stateless: bool = False  # a 2026-07-28 client: the session is the gateway's own (virtual/answers.py)

    @property
    def epoch(self):
        """The auth epoch (credentials are cached by it: connections/resolver.py)."""
        return self.epochs.principals


class MemberFailed(Exception):
    """A member did not answer usably; the text names it and is safe to show."""


async def credential(member, principal, epoch) -> dict[str, str]:
    """The caller's outbound headers for the member (CredentialMissing when they must connect one)."""
    return await gateway_headers(member.server, principal, epoch)


async def member_session(caller: Caller, member, headers) -> str:
    """The member's session of this virtual session, opened now when it is not yet: once, though a
    client's GET stream and its first requests arrive together (one opening at a time per member in a
    process; the first claimed in Redis wins across processes, gateway/virtual/sessions.py)."""
    opened = caller.record["members"].get(member.key)
    if opened:
        return opened
    key = (caller.virtual_path, caller.session_id, member.key)
    lock = _OPENING.setdefault(key, asyncio.Lock())
    try:
        async with lock:
            opened = caller.record["members"].get(member.key)
            if opened:
                return opened
            claimed = await virtual_sessions.members_of(caller.virtual_path, caller.session_id)
            caller.record["members"].update(claimed)
            if claimed.get(member.key):
                return claimed[member.key]
            opened = await deferred.open_upstream_session(member.server, caller.record["init"], headers)
            winner = await virtual_sessions.claim_member(
                caller.virtual_path, caller.session_id, member.key, opened
            )
            caller.record["members"][member.key] = winner
            if winner != opened:  # another process opened one first: ours ends unused
                await close(caller, member, opened)
            return winner
    finally:
        if not lock.locked() and _OPENING.get(key) is lock:
            del _OPENING[key]


def request_headers(
    record: dict, credential_headers: dict, member_session_id: str, message: dict | None = None
) -> dict[str, str]:
    """The headers of a request to a member (`message`: a task request names its task in `Mcp-Name`, as
    the tasks extension has clients do, so intermediaries route it to the instance holding the task)."""
    sent = {
        **credential_headers,
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": record["init"].get("protocolVersion", ""),
    }
    if member_session_id != deferred.NO_SESSION:
        sent["mcp-session-id"] = member_session_id
    params = message.get("params") if message is not None and isinstance(message.get("params"), dict) else {}
    if (
        message is not None
        and message.get("method") in jsonrpc.TASK_METHODS
        and isinstance(params.get("taskId"), str)
    ):
        sent |= {"mcp-method": message["method"], "mcp-name": params["taskId"]}
    return sent


async def ask(caller: Caller, member, message: dict) -> dict:
    """The member's answer to one request (the JSON-RPC message with its id), by the pipeline's exchange
    stage (gateway/exchange.py): within the fair shares, and once more with a refreshed sign-in after the
    member refuses the caller's, as a plain server is. A request stopped before its answer (its task
    cancelled) is cancelled at the member too (`notifications/cancelled`)."""

    async def attempt(headers: dict, _send) -> dict:
        return await _asked(caller, member, headers, await member_session(caller, member, headers), message)

    async def over_share(full: Refusal) -> dict:
        raise full

    try:
        url = member.server.proxy_pass_url
        return await exchange.carried(member.server, caller.principal, caller.epoch, url, attempt, over_share)
    except asyncio.CancelledError:  # the call was stopped (an A2A task cancelled): the member is told
        if message.get("method") != "initialize":
            cancelled = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": message["id"], "reason": "The caller cancelled the request."},
            }
            telling = asyncio.create_task(tell(caller, member, cancelled))
            _TELLING.add(telling)
            telling.add_done_callback(_TELLING.discard)
        raise
    except (CredentialMissing, CredentialUnavailable) as missing:
        raise MemberFailed(str(missing)) from None
    except SignInRefused:
        raise MemberFailed(f"{member.server.path} refused the caller's sign-in.") from None
    except Refusal as refusal:
        raise MemberFailed(refusal.detail) from None


async def _asked(caller: Caller, member, headers: dict, opened: str, message: dict) -> dict:
    path = member.server.path
    try:
        async with _posted(caller, member, headers, opened, message) as response:
            if refused := sign_in_refused(member.server, response):
                raise refused
            if response.status >= 400:
                raise MemberFailed(f"The MCP server at {path} answered {response.status}.")
            body = await upstream.read_bounded(response, settings.GATEWAY_MAX_REWRITE_BYTES)
            if body is None:
                raise MemberFailed(f"The MCP server at {path} answered more than the gateway reads.")
            content_type = response.headers.get("content-type", "")
    except upstream.ERRORS as error:
        raise MemberFailed(
            f"The MCP server at {path} could not be reached ({type(error).__name__})."
        ) from None
    for answer in _messages(body, content_type):
        if isinstance(answer, dict) and answer.get("id") == message["id"] and "method" not in answer:
            return answer
    raise MemberFailed(f"The MCP server at {path} gave no answer to the request.")


def _posted(caller: Caller, member, headers: dict, opened: str, message: dict):
    """One message POSTed to the member in the caller's session with it (an aiohttp request context)."""
    return upstream.session().post(
        member.server.proxy_pass_url,
        data=json.dumps(message),
        headers=request_headers(caller.record, headers, opened, message),
        timeout=upstream.timeout(),
        allow_redirects=False,
    )


async def tell(caller: Caller, member, message: dict) -> None:
    """Send the member a message that has no answer (a client's answer to the member's request), in the
    caller's session with it; a member that cannot take it is logged, the client is not told."""
    try:
        headers = await credential(member, caller.principal, caller.epoch)
        opened = await member_session(caller, member, headers)
        async with _posted(caller, member, headers, opened, message) as response:
            await response.read()
            if response.status >= 400:
                logger.info("%s refused an answer of a client: %s", member.server.path, response.status)
    except (CredentialMissing, CredentialUnavailable, Refusal, *upstream.ERRORS) as error:
        logger.info("An answer of a client could not reach %s: %r", member.server.path, error)


def _messages(body: bytes, content_type: str) -> list:
    """The JSON-RPC messages of an answer: a JSON body, or the `data` of each event of a stream."""
    try:
        if content_type.startswith("application/json"):
            decoded = json.loads(body)
            return decoded if isinstance(decoded, list) else [decoded]
        found = []
        for data in streams.events_data(body):
            decoded = json.loads(data)
            found += decoded if isinstance(decoded, list) else [decoded]
        return found
    except (ValueError, RecursionError):
        return []


async def whole_list(caller: Caller, member, method: str, key: str) -> list:
    """Every item of a member's list (`key` of each page's result), following its cursors. Each request
    has an id of its own: requests in flight at once on one member session (several of a client's lists
    sent together) must never share one, or the member answers one of them only."""
    items, cursor = [], None
    gathering = secrets.token_hex(8)
    for page in range(PAGE_LIMIT):
        params = {"cursor": cursor} if cursor else {}
        request_id = f"registry-virtual-{gathering}-{page}"
        request = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        answer = await ask(caller, member, request)
        result = answer.get("result")
        if not isinstance(result, dict):
            raise MemberFailed(f"The MCP server at {member.server.path} refused {method}.")
        items += [item for item in result.get(key) or [] if isinstance(item, dict)]
        cursor = result.get("nextCursor")
        if not isinstance(cursor, str) or not cursor:
            return items
    return items


async def close(caller: Caller, member, member_session_id: str) -> None:
    """End the member's session (best effort: it expires on the member's side otherwise)."""
    if member_session_id == deferred.NO_SESSION:
        return
    try:
        own = await credential(member, caller.principal, caller.epoch)
        headers = request_headers(caller.record, own, member_session_id)
        async with upstream.session().delete(
            member.server.proxy_pass_url, headers=headers, timeout=upstream.timeout()
        ) as response:
            await response.read()
    except (CredentialMissing, CredentialUnavailable, *upstream.ERRORS):
        pass
