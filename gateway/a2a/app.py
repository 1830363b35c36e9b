"""`/<agent path>/a2a`: an A2A agent through the gateway (the JSON-RPC and HTTP+JSON bindings, A2A v1.0
and v0.3: gateway/a2a/calls.py).

Every request is judged as an MCP one is, by the one decision (gateway/decision.py): the caller
(registry or identity-provider bearer token, or a session) and its token's audience, quarantine, then the
agent, which must be enabled and one the caller may see (visibility and ownership as everywhere: a hidden
agent is 404 like a missing one), then the message by the one rule and the limits: a scope's server rule
naming the agent's path and the A2A method (`{"server": "/travel", "methods":
["SendMessage", "GetTask"]}`). Tasks are the caller's that created them (gateway/a2a/tasks.py);
push-notification URLs are checked before the agent sees them (gateway/a2a/pushes.py). The caller's
credential never reaches the agent, which gets what the one credential resolver gives for it
(connections/resolver.py: nothing, the operator's shared headers, or the caller's own secret or sign-in,
refreshed and tried once more after the agent refuses it; without one, the caller is asked in the
protocol: gateway/a2a/asks.py). Streamed
answers (`SendStreamingMessage`, `SubscribeToTask`) pass through event by event, each event read for the
tasks it shows, and end when the client leaves.
`GET .../a2a/.well-known/agent-card.json` is the card with the gateway's URL (agents/cards.py)."""

from __future__ import annotations

import asyncio
import json
import logging
import time

from channels.db import database_sync_to_async
from django.conf import settings
from django.urls import Resolver404, resolve

from accounts.authentication import bearer_of, cached_principal
from agents import cards
from agents.policies import agent_reached
from agents.selectors import agent_routes, agent_routes_cached
from core.epochs import MISSING
from core.errors import ErrorCode
from core.public_url import base_url_of_scope
from core.targets import Target, TargetKind
from core.untrusted import InputRejected, json_loads
from gateway import (
    decision,
    exchange,
    forwarding,
    front,
    headers,
    jsonrpc,
    quotas,
    sessions,
    streams,
    tracing,
    upstream,
)
from gateway.a2a import asks, calls, metrics, params, pushes, tasks
from gateway.epochs import request_epochs
from gateway.front import Front, read_body
from gateway.paths import AgentPath, agent_path
from gateway.routing import NotOurs, Refusal, caller, challenge
from gateway.sign_in import SignInRefused, sign_in_refused
from servers.upstream_auth import CredentialMissing, CredentialUnavailable

logger = logging.getLogger(__name__)

CARD_PATH = "/.well-known/agent-card.json"
PASSED_HEADERS = (b"a2a-version", b"a2a-extensions", b"x-a2a-extensions")


class AgentGateway(Front):
    """Serves agents' gateway paths; hands every other request to `fallback`."""

    unavailable = "The gateway cannot check A2A tasks now (Redis is unavailable); try again."

    def target(self, raw_path: bytes):
        return agent_path(raw_path)

    def methods(self, target) -> tuple[str, ...]:
        return ("GET", "POST", "DELETE")

    def challenge(self, scope, target, refusal) -> dict[str, str]:
        """A 401 (or a 403 for want of scope) says how to authenticate (RFC 6750) and where the agent's
        resource metadata is (RFC 9728), as every resource of the gateway's does."""
        if refusal.status == 401 or refusal.code == ErrorCode.INSUFFICIENT_SCOPE:
            value = challenge(base_url_of_scope(scope), target.candidates[0], "a2a", refusal.code)
            return {"WWW-Authenticate": value}
        return {}

    async def serve(self, scope, receive, send, target: AgentPath) -> None:
        if problem := headers.origin_problem(scope):
            raise Refusal(403, ErrorCode.PERMISSION_DENIED, problem)
        epochs = await request_epochs()
        routed = _cached_route(scope, target.candidates, epochs)
        if routed is None:
            routed = await database_sync_to_async(_route)(scope, target.candidates, epochs)
        principal, agent = routed
        rules = await quotas.rules(epochs.limits)
        reached = Target(TargetKind.AGENT, agent.path if agent is not None else target.candidates[0])
        await decision.admit(principal, reached, rules, audience=target.candidates[0])  # before any 404
        if agent is None:
            raise Refusal(404, ErrorCode.NOT_FOUND, f"No A2A agent at {target.candidates[0]}.")
        method = scope["method"]
        if target.rest == CARD_PATH:
            if method != "GET":
                raise Refusal(
                    405, ErrorCode.METHOD_NOT_ALLOWED, "The card is read with GET.", {"Allow": "GET"}
                )
            return await forwarding.json_answer(
                send, 200, cards.gateway_card(agent, base_url_of_scope(scope))
            )
        if target.rest:
            return await _rest(scope, receive, send, agent, principal, target.rest, rules, epochs.principals)
        if method != "POST":
            raise Refusal(
                405, ErrorCode.METHOD_NOT_ALLOWED, "A2A JSON-RPC requests are POSTed.", {"Allow": "POST"}
            )
        raw = await read_body(receive, settings.MAX_REQUEST_BODY_BYTES)
        try:
            message = json_loads(raw)
        except InputRejected as rejected:
            code = jsonrpc.PARSE_ERROR if rejected.unparsable else jsonrpc.INVALID_REQUEST
            return await forwarding.json_answer(send, 400, jsonrpc.error_message(None, code, str(rejected)))
        if invalid := calls.not_jsonrpc(message):
            return await forwarding.json_answer(
                send, 400, jsonrpc.error_message(None, jsonrpc.INVALID_REQUEST, invalid)
            )
        call = calls.from_jsonrpc(message)
        await _judged_and_forwarded(
            scope, receive, send, agent, principal, call, raw, rules, epochs.principals
        )


def _cached_route(scope, candidates: tuple[str, ...], epochs):
    """_route from the per-process caches alone (no database, no thread), or None when either misses."""
    token = bearer_of(headers.first(scope, b"authorization"))
    routes = agent_routes_cached(candidates, (epochs.agents, epochs.principals))
    principal = cached_principal(token, epochs.principals) if token else None
    if routes is MISSING or principal is None:
        return None
    if not routes:
        _not_ours(scope)
    return principal, agent_reached(principal, routes)


def _route(scope, candidates: tuple[str, ...], epochs):
    """(the caller, the agent it may see at the path or None). A path no agent holds that is a page of
    Django's is Django's (NotOurs), whoever asks; the caller comes before the agent, so an anonymous
    client cannot tell agents' paths from unknown ones."""
    routes = agent_routes(candidates, (epochs.agents, epochs.principals))
    if not routes:
        _not_ours(scope)
    auth, cookie = headers.first(scope, b"authorization"), headers.first(scope, b"cookie")
    principal = caller(auth, cookie, epochs.principals)
    return principal, agent_reached(principal, routes)


def _not_ours(scope) -> None:
    """NotOurs when the path is a page of Django's."""
    try:
        resolve(scope["path"])
    except Resolver404:
        return
    raise NotOurs


async def _rest(scope, receive, send, agent, principal, rest: str, rules, epoch) -> None:
    """An HTTP+JSON (REST) request: its method and task from the path, its body when it has one."""
    raw = await read_body(receive, settings.MAX_REQUEST_BODY_BYTES)
    try:
        body = json_loads(raw) if raw.strip() else {}
    except InputRejected as rejected:
        raise Refusal(400, ErrorCode.BAD_REQUEST, str(rejected)) from None
    query = scope.get("query_string", b"").decode("latin-1")
    call = calls.from_rest(scope["method"], rest, query, body)
    if call is None:
        raise Refusal(404, ErrorCode.NOT_FOUND, f"No A2A operation is {scope['method']} {rest[:200]}.")
    await _judged_and_forwarded(scope, receive, send, agent, principal, call, raw, rules, epoch)


async def _judged_and_forwarded(
    scope, receive, send, agent, principal, call: calls.Call, raw: bytes, rules, epoch
) -> None:
    """One call: judged by the rule and the limits, its tasks and push URLs checked, the caller's
    credential for the agent found (`epoch`: the principals' and credentials'), forwarded (once more
    after a refused sign-in is refreshed), the answer passed back."""
    target = Target(TargetKind.AGENT, agent.path)
    call.trace = tracing.a2a_received(scope, call, agent)
    try:
        await _carried(scope, receive, send, agent, principal, call, raw, rules, epoch, target)
    finally:
        tracing.ended(call.trace, "cancelled")  # what no answer ended (the client left, the agent failed)


async def _carried(
    scope, receive, send, agent, principal, call: calls.Call, raw: bytes, rules, epoch, target
):
    asked = jsonrpc.Message(raw={}, kind="request", method=call.method)
    judged = await decision.judged_calls(rules, principal, target, [asked])
    if judged.denied:
        tracing.refused(call.trace, judged.denied[0], str(calls.ACCESS_DENIED))
        return await forwarding.json_answer(send, *call.refused(calls.ACCESS_DENIED, judged.denied[0]))
    if not judged.limits.allowed:
        status, code, text, data, extra = quotas.refusal(judged.limits)
        tracing.refused(call.trace, text, str(code))
        return await forwarding.json_answer(send, *call.refused(code, text, data, status), extra)
    send = forwarding.headers_added(send, judged.limits.headers)
    owner = sessions.owner(principal)
    try:
        named = params.named(call)
    except params.ParamsRefused as refused:
        return await forwarding.json_answer(send, *call.refused(calls.INVALID_PARAMS, str(refused)))
    if not await tasks.owns(agent.path, owner, named.tasks, named.contexts):
        return await forwarding.json_answer(send, *call.refused(tasks.TASK_NOT_FOUND, "Task not found"))
    if problem := await pushes.problem(named.push_urls):
        return await forwarding.json_answer(send, *call.refused(calls.INVALID_PARAMS, problem))
    sent = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    sent |= {name.decode(): value for name in PASSED_HEADERS if (value := headers.first(scope, name))}
    url, started = call.upstream_url(agent), time.perf_counter()

    async def attempt(credential: dict[str, str], send) -> None:
        await _exchanged(scope, receive, send, agent, call, raw, sent | credential, url, owner, started)

    async def over_share(full: Refusal) -> None:
        refused = call.refused(quotas.RATE_LIMITED, full.detail, status=full.status)
        await forwarding.json_answer(send, *refused, full.headers)

    try:  # the one credential resolver's, as for servers; the caller's own never goes
        await exchange.carried(agent, principal, epoch, url, attempt, over_share, send)
    except (CredentialMissing, SignInRefused) as lost:
        missing = lost if isinstance(lost, CredentialMissing) else lost.missing(agent)
        return await asks.ask(scope, send, call, call.params, missing)
    except CredentialUnavailable as unavailable:
        return await forwarding.json_answer(send, *call.refused(jsonrpc.INTERNAL_ERROR, str(unavailable)))


async def _exchanged(
    scope, receive, send, agent, call: calls.Call, raw: bytes, sent: dict, url: str, owner, started
):
    """The call sent to the agent and its answer passed back (a JSON answer, or a stream event by event)."""
    method = call.method
    try:
        async with upstream.session().request(
            scope["method"], url, data=raw, headers=sent, timeout=upstream.timeout(), allow_redirects=False
        ) as response:
            if refused := sign_in_refused(agent, response):  # before anything reaches the client
                metrics.report(agent.path, method, success=False, started=started, sent=len(raw), received=0)
                raise refused
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                seen = _Seen()
                relay = asyncio.create_task(_stream(response, send, agent.path, owner, call, seen))
                watch = asyncio.create_task(front.disconnected(receive))
                await asyncio.wait({relay, watch}, return_when=asyncio.FIRST_COMPLETED)
                for task in (relay, watch):  # a client that leaves ends the agent's stream too
                    task.cancel()
                await asyncio.gather(relay, watch, return_exceptions=True)
                ok = response.status == 200 and not seen.failed
                tracing.ended(call.trace, None if ok else "stream_error")
                return metrics.report(
                    agent.path, method, success=ok, started=started, sent=len(raw), received=seen.received
                )
            body = await upstream.read_bounded(response, settings.GATEWAY_MAX_REWRITE_BYTES)
            status = response.status
    except upstream.ERRORS as error:
        metrics.report(agent.path, method, success=False, started=started, sent=len(raw), received=0)
        failed = f"The agent at {agent.path} could not be reached ({type(error).__name__})."
        return await forwarding.json_answer(send, *call.refused(jsonrpc.INTERNAL_ERROR, failed))
    if body is None:
        too_big = f"The agent at {agent.path} answered more than the gateway reads."
        return await forwarding.json_answer(send, *call.refused(jsonrpc.INTERNAL_ERROR, too_big))
    ok = await _answer(send, status, body, agent.path, owner, call)
    metrics.report(agent.path, method, success=ok, started=started, sent=len(raw), received=len(body))


async def _answer(send, status: int, body: bytes, agent_path: str, owner: str, call: calls.Call) -> bool:
    """A JSON answer: its tasks claimed (a message's), cut to the caller's own (a task list). Whether it
    is a success."""
    try:
        answer = json.loads(body)
    except ValueError:
        answer = None
    result = call.result(answer)
    tracing.a2a_answered(call.trace, answer, result)
    if call.method in tasks.SENDS and result is not None:
        await tasks.claim(agent_path, owner, *tasks.created(result))
    if call.method in tasks.LISTS and isinstance(result, dict) and isinstance(result.get("tasks"), list):
        own = await tasks.own_only(agent_path, owner, result["tasks"])
        result = {**result, "tasks": own, **({"totalSize": len(own)} if "totalSize" in result else {})}
        answer = result if call.rest else {**answer, "result": result}
        body = json.dumps(answer, separators=(",", ":")).encode()
    start = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": body})
    return status < 400 and isinstance(answer, dict) and "error" not in answer


class _Seen:
    """What a stream passed on so far: its bytes, and whether an event carried an error."""

    received = 0
    failed = False


async def _stream(response, send, agent_path: str, owner: str, call: calls.Call, seen: _Seen) -> None:
    """An event stream passed on event by event through the gateway's one reader (gateway/streams.py
    EventStream, whole events): a message's events claim the tasks they show. An event that has not
    ended after GATEWAY_MAX_REWRITE_BYTES ends the exchange (the agent's connection is closed) with an
    error event to the client: the gateway holds at most that much of an unfinished event."""
    start = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
    await send({"type": "http.response.start", "status": response.status, "headers": start})

    def refusal(head: bytes, why: str) -> bytes:
        refused = call.refused(jsonrpc.INTERNAL_ERROR, f"The agent at {agent_path} sent an event that {why}.")
        return b"data: " + _compact(refused[1]) + b"\n\n"

    reader = streams.EventStream(
        None,
        agent_path,
        filtering=False,
        limit=settings.GATEWAY_MAX_REWRITE_BYTES,
        inspect=True,
        refusal=refusal,
    )
    async for chunk in response.content.iter_any():
        seen.received += len(chunk)
        out = reader.feed(chunk)
        for data in reader.drained():
            seen.failed = await _read_event(data, agent_path, owner, call) or seen.failed
        if out:
            await send({"type": "http.response.body", "body": out, "more_body": True})
        if reader.cut:
            seen.failed = True
            response.close()  # the connection, not kept for another exchange (nor read to its end)
            await send({"type": "http.response.body", "body": b""})
            return
    tail = reader.close()
    for data in reader.drained():
        seen.failed = await _read_event(data, agent_path, owner, call) or seen.failed
    await send({"type": "http.response.body", "body": tail})


def _compact(value) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


async def _read_event(data: bytes, agent_path: str, owner: str, call: calls.Call) -> bool:
    """Claims the tasks a message's event (its data) shows; whether the event is an error."""
    try:
        payload = json.loads(data) if data else None
    except ValueError:
        return False
    if not isinstance(payload, dict):
        return False
    if call.method in tasks.SENDS and call.result(payload) is not None:
        await tasks.claim(agent_path, owner, *tasks.created(call.result(payload)))
    return "error" in payload
