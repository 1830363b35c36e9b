"""The gateway's ASGI application, ahead of Django's middleware in `registry_site/asgi.py`.

`/<server path>/mcp` is checked in this order: the Host and Origin (gateway/headers.py), the caller (the
same Principal as every surface: registry or identity-provider bearer token, or a session), the session
(it must be the caller's: gateway/sessions.py), then every message of the body by the one rule
(gateway/jsonrpc.py) with the protocol headers agreeing with it. What is allowed is streamed to the
server's `proxy_pass_url` with the server's own outbound headers in place of the client's credentials,
within the caller's and the server's fair shares (gateway/fair_share.py), and within the limits and
quarantines operators set (gateway/quotas.py). Sessions live between client and
server, so any gateway process serves any request. Anything that is not a gateway path goes to Django.
"""

from __future__ import annotations

from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from django.conf import settings

from accounts.authentication import bearer_of
from core.errors import ErrorCode
from core.public_url import base_url_of_scope
from core.targets import Target, TargetKind
from core.untrusted import InputRejected, json_loads
from gateway import (
    asking,
    decision,
    deferred,
    exchange,
    forwarding,
    front,
    handoff,
    headers,
    jsonrpc,
    messages,
    ordering,
    paths,
    quotas,
    routing,
    sessions,
    tasks,
    tracing,
)
from gateway.epochs import request_epochs
from gateway.sign_in import SignInRefused
from gateway.virtual import answers as virtual
from gateway.virtual import search as virtual_search
from gateway.virtual import sse as virtual_sse
from servers.upstream_auth import CredentialMissing, CredentialUnavailable

METHODS = {"mcp": ("GET", "POST", "DELETE"), "sse": ("GET",), "messages": ("POST",)}
SESSION_GONE = "Session not found"


class Gateway(front.Front):
    """Serves servers' and virtual servers' gateway paths; hands every other request to `fallback` (the
    agents' gateway, then Django)."""

    unavailable = "The gateway cannot check MCP sessions now (Redis is unavailable); try again."

    def target(self, raw_path: bytes):
        return paths.gateway_path(raw_path)

    def methods(self, target) -> tuple[str, ...]:
        return METHODS[target.endpoint]

    def challenge(self, scope, target, refusal) -> dict[str, str]:
        if refusal.status == 401 or refusal.code == ErrorCode.INSUFFICIENT_SCOPE:
            value = routing.challenge(
                base_url_of_scope(scope), target.candidates[0], target.endpoint, refusal.code
            )
            return {"WWW-Authenticate": value}
        return {}

    async def serve(self, scope, receive, send, target: paths.GatewayPath) -> None:
        """The request, kept in its session's order (gateway/ordering.py): noted before any await."""
        session_id = headers.first(scope, b"mcp-session-id")
        if not session_id or target.endpoint != "mcp":
            return await self.check_and_forward(scope, receive, send, target, None, [])
        if scope["method"] != "GET":
            earlier = ordering.streams_before(scope["path"], session_id)
            return await self.check_and_forward(scope, receive, send, target, None, earlier)
        opened = ordering.stream_arrived(scope["path"], session_id)
        try:
            await self.check_and_forward(scope, receive, send, target, opened, [])
        finally:
            ordering.stream_settled(scope["path"], session_id, opened)

    async def check_and_forward(self, scope, receive, send, target, opened, earlier) -> None:
        method = scope["method"]
        allowed = METHODS[target.endpoint]
        if method not in allowed:
            raise routing.Refusal(
                405,
                ErrorCode.METHOD_NOT_ALLOWED,
                f"{method} is not an MCP method here.",
                {"Allow": ", ".join(allowed)},
            )
        if problem := headers.origin_problem(scope):
            raise routing.Refusal(403, ErrorCode.PERMISSION_DENIED, problem)
        authorization = headers.first(scope, b"authorization")
        epochs = await request_epochs()
        route = routing.cached_route(bearer_of(authorization), target.candidates, epochs)
        if route is None:
            route = await database_sync_to_async(routing.resolve_route)(
                scope["path"], target.candidates, authorization, headers.first(scope, b"cookie"), epochs
            )
        server_path, principal = route.path, route.principal
        rules, reached = await quotas.rules(epochs.limits), quotas.target_of(route)
        await decision.admit(principal, reached, rules, audience=target.candidates[0])
        url = route.server.proxy_pass_url if route.server is not None else ""
        query = scope.get("query_string", b"")
        if query:
            url = f"{url}{'&' if '?' in url else '?'}{query.decode('latin-1')}"
        if target.endpoint == "messages" and route.virtual is None:
            session_id = (parse_qs(query.decode("latin-1")).get("session_id") or [""])[0]
            url = await sessions.upstream_endpoint(server_path, session_id, principal)
            if url is None:
                raise routing.Refusal(
                    404, ErrorCode.NOT_FOUND, "No SSE session of this server has that session_id."
                )
        session_id = headers.first(scope, b"mcp-session-id")
        if session_id and not await sessions.belongs_to(server_path, session_id, principal):
            return await forwarding.json_answer(
                send, 404, jsonrpc.error_message(None, jsonrpc.INVALID_REQUEST, SESSION_GONE)
            )
        checked, body = None, b""
        if method == "POST":
            raw = await front.read_body(receive, settings.MAX_REQUEST_BODY_BYTES)
            answering = "mcp" if route.virtual is not None else target.endpoint  # the gateway answers denials
            unwrap = virtual_search.unwrapper(route.virtual)  # search-then-call's two tools, as what they ask
            checked, answer = _check(
                scope, raw, principal, server_path, answering, unwrap, virtual=route.virtual is not None
            )
            if answer is not None and target.endpoint == "messages" and route.virtual is not None:
                return await virtual_sse.post(scope, send, route, None, answer, epochs)
            if answer is not None:
                return await forwarding.json_answer(send, *answer)
            if route.virtual is None:
                methods = [method for method, _ in checked.calls]
                judged = await decision.counted(rules, principal, reached, methods)
                if not judged.allowed:
                    tracing.refused_all(checked.trace, "a limit was reached", "limit_exceeded")
                    return await forwarding.json_answer(send, *quotas.mcp_refusal(judged, checked))
                send = forwarding.headers_added(send, judged.headers)
                checked.forward = tracing.forwarded(checked.trace, checked.forward, url)
            body = checked.forward_body(raw)
        elif not principal.allows_mcp(server_path, jsonrpc.INITIALIZE):
            raise routing.Refusal(
                403,
                ErrorCode.PERMISSION_DENIED,
                f"'{principal.username}' may not use server '{server_path}'.",
            )
        if route.virtual is not None and target.endpoint == "sse":
            return await virtual_sse.listen(scope, receive, send, route, epochs)
        if route.virtual is not None and target.endpoint == "messages":
            return await virtual_sse.post(scope, send, route, checked, None, epochs)
        if route.virtual is not None:
            try:
                return await virtual.answer(scope, receive, send, route, checked, method, session_id, epochs)
            finally:
                tracing.ended_all(checked.trace if checked is not None else None, {}, "cancelled")
        offered = (
            frozenset()
            if headers.has_param_headers(scope)
            else handoff.offered(headers.first(scope, handoff.HEADER))
        )
        if handoff.can_hand_off(route.server, offered, target.endpoint, checked, method):
            tool = checked.calls[0][1] if checked is not None and checked.calls else None
            redirect = handoff.redirect_headers(route.server, query, principal, tool)
            await send({"type": "http.response.start", "status": 200, "headers": redirect})
            return await send({"type": "http.response.body", "body": b""})

        async def attempt(credential: dict[str, str], send) -> None:
            """The request sent with `credential` (a deferred session paired first) and answered."""
            outbound_headers = {**headers.forwarded_request_headers(scope), **credential}
            names = checked.tasks if checked is not None else None
            if names is not None:  # a task request names the server's own task in its Mcp-Name
                outbound_headers.update(names.outbound_headers())
            answer_to = send
            if deferred.is_deferred(session_id):
                record = await deferred.pairing(server_path, session_id)
                if record is None:
                    return await forwarding.json_answer(
                        send, 404, jsonrpc.error_message(None, jsonrpc.INVALID_REQUEST, SESSION_GONE)
                    )
                paired = await deferred.upstream_session(route.server, session_id, record, credential)
                outbound_headers.pop("mcp-session-id", None)
                if paired != deferred.NO_SESSION:
                    outbound_headers["mcp-session-id"] = paired
                answer_to = forwarding.session_renamed(send, session_id)
            outbound = forwarding.Outbound(method=method, url=url, headers=outbound_headers, body=body)
            await forwarding.forward(
                receive, answer_to, route, outbound, checked, target.endpoint, opened, rename=names
            )

        async def over_share(full: routing.Refusal) -> None:
            if (answered := quotas.over_share(full, checked)) is None:
                raise full
            await forwarding.json_answer(send, *answered)

        await ordering.after(earlier)
        trace = checked.trace if checked is not None else None
        try:
            await exchange.carried(route.server, principal, epochs.principals, url, attempt, over_share, send)
        except (CredentialMissing, SignInRefused) as lost:
            tracing.refused_all(
                trace, "the caller has no usable credential for the server", "credential_missing"
            )
            missing = lost if isinstance(lost, CredentialMissing) else lost.missing(route.server)
            return await _without_credential(scope, send, route.server, principal, checked, method, missing)
        except CredentialUnavailable as unavailable:
            tracing.ended_all(trace, {}, "upstream_unavailable")
            raise routing.Refusal(502, ErrorCode.UPSTREAM_UNAVAILABLE, str(unavailable)) from None
        except routing.Refusal as refusal:
            tracing.ended_all(trace, {}, str(refusal.code))
            raise
        finally:
            tracing.ended_all(trace, {}, "cancelled")  # what no answer ended (the client left)
        if method == "DELETE" and session_id:
            await sessions.unbind(server_path, session_id)
            if deferred.is_deferred(session_id):
                await deferred.forget(server_path, session_id)


async def _without_credential(scope, send, server, principal, checked, method: str, missing) -> None:
    """A caller without a usable credential for a server that needs their own: the gateway serves the
    session itself while it can (gateway/deferred.py) and asks for the connection in-band otherwise
    (gateway/asking.py)."""
    session_id = headers.first(scope, b"mcp-session-id")
    if missing.connect_path is not None and checked is not None and deferred.answerable(checked):
        versions = asking.versions(scope, checked)
        status, payload, extra = await deferred.answer(server, principal, checked, session_id, versions)
        return await forwarding.json_answer(send, status, payload, extra)
    if checked is not None:
        return await forwarding.json_answer(send, *asking.answer(scope, checked, missing))
    if deferred.is_deferred(session_id) and method == "DELETE":
        await sessions.unbind(server.path, session_id)
        await deferred.forget(server.path, session_id)
        return await forwarding.json_answer(send, 200, None)
    if deferred.is_deferred(session_id) and method == "GET":  # no stream until the server's session opens
        raise routing.Refusal(405, ErrorCode.METHOD_NOT_ALLOWED, str(missing), {"Allow": "POST, DELETE"})
    raise asking.refusal(scope, missing)


def _check(scope, raw: bytes, principal, server_path: str, endpoint: str, unwrap=None, virtual=False):
    """(the checked body, None), or (None, (status, the JSON-RPC answer the gateway gives itself)).
    `unwrap` rewrites the body once its headers were compared with it, before anything judges it; task
    requests are resolved to the caller's own tasks first (gateway/tasks.py; at a `virtual` server, the
    calls that may create one are noted where their member is known)."""
    try:
        payload = json_loads(raw)
        batch, read = jsonrpc.read(payload)
    except InputRejected as rejected:
        code = jsonrpc.PARSE_ERROR if rejected.unparsable else jsonrpc.INVALID_REQUEST
        return None, (400, jsonrpc.error_message(None, code, str(rejected)))
    except jsonrpc.BodyRefused as refused:
        return None, (400, jsonrpc.error_message(None, refused.code, str(refused)))
    if problem := headers.protocol_disagreement(scope, batch, read):
        request_id = read[0].raw.get("id") if len(read) == 1 else None
        return None, (400, jsonrpc.error_message(request_id, jsonrpc.HEADER_MISMATCH, problem))
    if unwrap is not None:
        payload = unwrap(payload)
        batch, read = jsonrpc.read(payload)
    owner = sessions.owner(principal)

    def may_call(tool: str) -> bool:  # the one judge's rule, as for a task request of that task
        asked = jsonrpc.Message(raw={}, kind="request", method="tasks/get", tool=tool)
        return decision.refusal(principal, Target(TargetKind.SERVER, server_path), asked) is None

    payload, refused, names = tasks.resolved(
        payload, owner, server_path, calls=not virtual, may_call=may_call
    )
    if names.rewritten or refused:
        read = jsonrpc.read(payload)[1] if payload else []
    checked = messages.check_messages(batch, read, principal, server_path)
    checked.denied += refused
    checked.tasks, checked.resolved = (names or None), names.rewritten
    checked.trace = tracing.received_all(scope, read, checked)
    if endpoint == "messages" and checked.denied:
        messages.stand_in_denied(checked)
    if not checked.forward:
        if not checked.denied:
            return None, (202, None)
        return None, (200, checked.denied if checked.batch else checked.denied[0])
    return checked, None
