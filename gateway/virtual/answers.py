"""A virtual server at `/<path>/mcp` (virtual_servers/): the gateway is the server its clients talk to.
The request has passed every check a plain server's does (Host and Origin, the caller, the session's
owner, each message by the one rule at the virtual path, with the names clients see); then:

- `initialize` (2025-03-26 to 2025-11-25) opens a session of the gateway's own
  (gateway/virtual/sessions.py), with the capabilities of what the members carry; 2026-07-28's
  `server/discover` says the same without a session, and that revision's requests use a session the
  gateway keeps for the caller; `ping`, `logging/setLevel` and notifications are answered here;
- the lists are gathered from every member (gateway/virtual/lists.py);
- `tools/call`, `prompts/get`, `resources/read` / `subscribe` / `unsubscribe` and `completion/complete`
  reach the member under its own names (gateway/virtual/routes.py: a fixed argument sent by the client
  is refused, the fixed ones added), checked by the one rule again at the member's own path, and its
  answer streams back (gateway/forwarding.py), renamed where it must be (gateway/virtual/asks.py), under
  the virtual session's id; a client's answer to a member's request goes back to that member;
- GET merges the members' own streams (gateway/virtual/streams.py);
- DELETE ends the members' sessions and the virtual one."""

from __future__ import annotations

import asyncio
import json
import logging
import secrets

from core.errors import ErrorCode
from core.protocol_versions import HANDSHAKE_VERSIONS, STATELESS_VERSION
from gateway import asking, exchange, forwarding, jsonrpc, messages, quotas, sessions, tasks, tracing
from gateway.deferred import STATELESS_RESULT
from gateway.routing import Refusal, Route
from gateway.sign_in import SignInRefused
from gateway.virtual import agent_tools, routes
from gateway.virtual import asks as virtual_asks
from gateway.virtual import judged as virtual_judged
from gateway.virtual import lists as virtual_lists
from gateway.virtual import members as virtual_members
from gateway.virtual import search as virtual_search
from gateway.virtual import sessions as virtual_sessions
from gateway.virtual import skills as virtual_skills
from gateway.virtual import streams as virtual_streams
from gateway.virtual.members import Caller, MemberFailed
from servers.upstream_auth import CredentialMissing, CredentialUnavailable
from virtual_servers.mapping import (
    carries_resources,
)

logger = logging.getLogger(__name__)


METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
SESSION_GONE = "Session not found"
# what a client declares it takes of server-to-client requests
ASKED_OF_CLIENTS = frozenset({"sampling", "elicitation", "roots"})
ROUTED = frozenset(
    {
        "tools/call",
        "prompts/get",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "completion/complete",
        *jsonrpc.TASK_METHODS,  # to the member whose task it is (gateway/tasks.py)
    }
)


async def answer(scope, receive, send, route: Route, checked, method: str, session_id: str, epochs) -> None:
    """The virtual server's answer to a checked request."""
    virtual, principal = route.virtual, route.principal
    if method == "GET" and not session_id:
        raise Refusal(400, ErrorCode.BAD_REQUEST, "A stream belongs to a session: send Mcp-Session-Id.")
    record = await virtual_sessions.load(virtual.path, session_id) if session_id else None
    if session_id and record is None:
        return await forwarding.json_answer(
            send, 404, jsonrpc.error_message(None, jsonrpc.INVALID_REQUEST, SESSION_GONE)
        )
    caller = Caller(principal, epochs, virtual.path, session_id, record)
    if method == "GET":
        return await virtual_streams.listen(scope, receive, send, route, caller)
    if method == "DELETE":
        if record is not None:
            await close(caller, virtual)
        return await forwarding.json_answer(send, 200, None)
    forward = checked.forward
    versions = asking.versions(scope, checked)
    if not session_id and any(version >= STATELESS_VERSION for version in versions):
        caller = await _stateless(caller, forward)
        record = caller.record
    single = forward[0] if not checked.batch and len(forward) == 1 else None
    if (
        single is not None
        and single.get("method") in ROUTED
        and "id" in single
        and record is not None
        and not virtual_skills.concerns(virtual, single)
        and not routes.agent_tool(virtual, single)
        and not routes.agent_task(single)
    ):
        return await _stream(scope, receive, send, route, caller, checked, single)
    if (
        single is not None
        and record is not None
        and "id" in single
        and agent_tools.progress_token(single) is not None
    ):
        if owner := routes.agent_tool(virtual, single):  # an agent's tool, its progress streamed
            return await agent_tools.streamed(send, virtual, caller, single, owner)
    replies, opened = [], None
    for message in forward:
        if "method" not in message:  # a client's answer to a member's request goes to that member
            if record is not None and (found := virtual_asks.answered(message, virtual.members)):
                await virtual_members.tell(caller, *found)
            continue
        if "id" not in message:
            continue  # notifications are the gateway's own to take
        traced = tracing.exchange_of(checked, message)
        reply, new_session = await _reply(virtual, caller, message, traced, checked.tasks)
        tracing.ended(traced, tracing.outcome(reply), reply.get("result"))
        if caller.stateless and "result" in reply:
            reply = {**reply, "result": {**STATELESS_RESULT, **reply["result"]}}
        opened = opened or new_session
        replies.append(reply)
    replies += checked.denied
    extra = {"mcp-session-id": opened} if opened else {}
    if not replies:
        return await forwarding.json_answer(send, 202, None, extra)
    return await forwarding.json_answer(send, 200, replies if checked.batch else replies[0], extra)


async def tool_called(virtual, principal, epochs, name: str, arguments: dict, request_id) -> dict:
    """The JSON-RPC answer to a `tools/call` made for `principal` outside any MCP session (the virtual
    server's A2A face: gateway/virtual/a2a.py): judged at the virtual path as the front judges one, then
    answered as any, under the session the gateway keeps for the caller."""
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    checked = messages.check_messages(*jsonrpc.read(message), principal, virtual.path)
    if checked.denied:
        return checked.denied[0]
    reply, _ = await _reply(virtual, await caller_for(virtual, principal, epochs), message)
    return reply


async def caller_for(virtual, principal, epochs) -> Caller:
    """The caller of a request outside any MCP session, under the session the gateway keeps for it."""
    return await _stateless(Caller(principal, epochs, virtual.path, "", None), [])


async def _reply(virtual, caller: Caller, message: dict, traced=None, names=None) -> tuple[dict, str | None]:
    """(the answer to one request, the session it opened if it was `initialize`); `names`: the request's
    task names, when it resolved any (gateway/tasks.py)."""
    method, request_id = message["method"], message["id"]
    if method == "initialize":
        session_id, result = await _open(virtual, caller, message)
        return _result(request_id, result), session_id
    if method == "server/discover":  # 2026-07-28: what a client needs to know, no session
        discovered = {
            "supportedVersions": [*HANDSHAKE_VERSIONS, STATELESS_VERSION],
            **_described(virtual),
        }
        return _result(request_id, {**discovered, **STATELESS_RESULT}), None
    if method in ("ping", "logging/setLevel"):
        return _result(request_id, {}), None
    if caller.record is None:
        return jsonrpc.error_message(request_id, jsonrpc.INVALID_REQUEST, "Send initialize first."), None
    if virtual_skills.concerns(virtual, message):
        return await virtual_skills.answered(virtual, caller, message), None
    if virtual_search.concerns(message):
        return await virtual_search.answered(virtual, caller, message), None
    if method == "tools/list" and virtual.tool_search:
        return _result(request_id, {"tools": virtual_search.TOOLS}), None
    if method in virtual_lists.LISTS:
        listed = await virtual_lists.merged(virtual, caller, method)
        if method == "tools/list":
            listed += await agent_tools.listed(virtual, caller)
        return _result(request_id, {virtual_lists.LISTS[method]: listed}), None
    if owner := routes.agent_tool(virtual, message):
        return await agent_tools.called(virtual, caller, message, owner), None
    if routes.agent_task(message):
        return await agent_tools.task_request(virtual, caller, message), None
    if method in ROUTED:
        found = await routes.member_message(virtual, caller, message)
        if "error" in found:
            return found, None
        member, routed = found["member"], found["message"]
        if refused := await virtual_judged.refused(caller, member, message, routed):
            tracing.refused(traced, refused[0]["error"]["message"], str(refused[0]["error"]["code"]))
            return refused[0], None  # in a batch or beside others: the error alone
        routed = tracing.upstream(traced, routed, member.server.proxy_pass_url, name=tracing.name_of(routed))
        named = routes.task_names(caller, member, message, names)
        try:
            answer = await virtual_members.ask(caller, member, routed)
            return (named(answer) if named else answer), None
        except MemberFailed as failed:
            return jsonrpc.error_message(request_id, jsonrpc.INTERNAL_ERROR, str(failed)), None
    return jsonrpc.error_message(
        request_id, METHOD_NOT_FOUND, f"{method} is not served by virtual servers."
    ), None


def _result(request_id, result: dict) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


async def _open(virtual, caller: Caller, message: dict) -> tuple[str, dict]:
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    asked = params.get("protocolVersion")
    version = asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
    session_id = virtual_sessions.PREFIX + secrets.token_urlsafe(24)
    await sessions.bind(virtual.path, session_id, caller.principal)
    record = virtual_sessions.new_record({**params, "protocolVersion": version})
    await virtual_sessions.keep(virtual.path, session_id, record)
    return session_id, {"protocolVersion": version, **_described(virtual)}


def _described(virtual) -> dict:
    """What `initialize` and `server/discover` say of the virtual server: what its members carry (each
    member's list changes and resource updates reach the client on its stream: gateway/virtual/streams.py),
    completions and log messages passed to the member they concern, and the skills extension when it
    serves skills (gateway/virtual/skills.py), and the tasks extension (its members' tasks are the
    caller's: gateway/tasks.py)."""
    capabilities = {"tools": {"listChanged": True}, "completions": {}, "logging": {}}
    if any(member.prompts.get("include") != [] for member in virtual.members):
        capabilities["prompts"] = {"listChanged": True}
    if any(carries_resources(member) for member in virtual.members):
        capabilities["resources"] = {"subscribe": True, "listChanged": True}
    extensions = {tasks.EXTENSION: {}}  # a member's tasks reach the client, as the caller's (tasks.py)
    if served := virtual_skills.capability(virtual):  # its skills are resources too
        capabilities.setdefault("resources", {})
        extensions |= served
    capabilities["extensions"] = extensions
    described = {"capabilities": capabilities, "serverInfo": {"name": virtual.name, "version": "1.0.0"}}
    if virtual.description:
        described["instructions"] = virtual.description
    return described


async def _stateless(caller: Caller, forward: list) -> Caller:
    """The caller of a 2026-07-28 request (no session): the gateway keeps its members' sessions for the
    caller, as for a session of its own, opened with what the first request's `_meta` says of the client
    (a client's answer to a member's request names no client, yet must reach the session that asked).
    2026-07-28 has no requests from server to client: members are told the client takes none."""
    meta = {}
    for message in forward:
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        if isinstance(params.get("_meta"), dict):
            meta = params["_meta"]
            break
    client = meta.get("io.modelcontextprotocol/clientInfo")
    client = client if isinstance(client, dict) else {"name": "unnamed", "version": "0"}
    capabilities = meta.get("io.modelcontextprotocol/clientCapabilities")
    session_id = virtual_sessions.stateless_id(sessions.owner(caller.principal))
    record = await virtual_sessions.load(caller.virtual_path, session_id)
    if record is None:
        record = virtual_sessions.new_record(
            {
                "protocolVersion": HANDSHAKE_VERSIONS[-1],
                "capabilities": {
                    name: value
                    for name, value in (capabilities if isinstance(capabilities, dict) else {}).items()
                    if name not in ASKED_OF_CLIENTS
                },
                "clientInfo": client,
            }
        )
        await virtual_sessions.keep(caller.virtual_path, session_id, record)
    return Caller(caller.principal, caller.epochs, caller.virtual_path, session_id, record, stateless=True)


async def _stream(scope, receive, send, route: Route, caller: Caller, checked, message: dict) -> None:
    """A routed request carried to its member and the answer streamed back under the virtual session."""
    virtual, principal = route.virtual, route.principal
    found = await routes.member_message(virtual, caller, message)
    if "error" in found:
        return await forwarding.json_answer(send, 200, found)
    member, routed = found["member"], found["message"]
    traced = tracing.exchange_of(checked, message)
    if refused := await virtual_judged.refused(caller, member, message, routed):
        error, status, headers = refused
        tracing.refused(traced, error["error"]["message"], str(error["error"]["code"]))
        return await forwarding.json_answer(send, status, error, headers)
    routed = tracing.upstream(traced, routed, member.server.proxy_pass_url, name=tracing.name_of(routed))
    member_checked = messages.check_messages(*jsonrpc.read(routed), principal, member.server.path)
    member_checked.trace = tracing.alone(checked, message)
    member_route = Route(server=member.server, principal=principal)
    rename = virtual_asks.Outgoing(member, virtual.members, stateless=caller.stateless)
    if named := routes.task_names(caller, member, message, checked.tasks):
        rename = tasks.Both(rename, named)
    body = json.dumps(routed, separators=(",", ":")).encode()

    async def attempt(credential: dict[str, str], send) -> None:
        opened = await virtual_members.member_session(caller, member, credential)
        sent = virtual_members.request_headers(caller.record, credential, opened, routed)
        outbound = forwarding.Outbound(
            method="POST", url=member.server.proxy_pass_url, headers=sent, body=body
        )
        renamed = forwarding.session_renamed(send, None if caller.stateless else caller.session_id)
        await forwarding.forward(
            receive, renamed, member_route, outbound, member_checked, "mcp", rename=rename
        )

    async def over_share(full: Refusal) -> None:
        if (answered := quotas.over_share(full, checked)) is None:
            raise full
        await forwarding.json_answer(send, *answered)

    try:
        await exchange.carried(
            member.server, principal, caller.epoch, member.server.proxy_pass_url, attempt, over_share, send
        )
    except CredentialMissing as missing:
        await forwarding.json_answer(send, *asking.answer(scope, checked, missing))
    except SignInRefused as refused:
        await forwarding.json_answer(send, *asking.answer(scope, checked, refused.missing(member.server)))
    except CredentialUnavailable as unavailable:
        raise Refusal(502, ErrorCode.UPSTREAM_UNAVAILABLE, str(unavailable)) from None


async def close(caller: Caller, virtual) -> None:
    members = {member.key: member for member in virtual.members}
    opened = {
        **caller.record["members"],
        **await virtual_sessions.members_of(virtual.path, caller.session_id),
    }
    await asyncio.gather(
        *(virtual_members.close(caller, members[key], own) for key, own in opened.items() if key in members)
    )
    await sessions.unbind(virtual.path, caller.session_id)
    await virtual_sessions.forget(virtual.path, caller.session_id)
