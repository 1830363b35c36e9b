"""GET /validate: the reverse proxy's `auth_request` check of one MCP call, judged as the gateway judges it:
quarantines first (403 with the operator's reason), then the caller's rights, then the limits, counted here
(429 with `Retry-After` and the RateLimit headers; an allowed call's answer carries those headers too).

Credentials: a bearer token in `Authorization` or `X-Authorization`, else the session cookie. Target:
the server `X-Original-URL` names, resolved exactly as the built-in gateway resolves it (gateway).
Call: the JSON-RPC body from `X-Body` or the request body; without one, only a GET or DELETE
(`X-Original-Method`) is judged, as the session. Identity headers a client sends are never read. Task
requests of the MCP tasks extension are refused (501): a task's id is the gateway's own, bound to its
caller (gateway/tasks.py), and a proxy that carries the exchange itself cannot rename it.
"""

import time
from urllib.parse import unquote, urlsplit

from asgiref.sync import async_to_sync
from rest_framework import exceptions
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import (
    bearer_token,
    principal_from_bearer,
    principal_from_session,
    report_auth_request,
)
from accounts.principal import Principal
from core.errors import ApiError, ErrorCode
from core.openapi import documented, header_parameter
from core.targets import Target, TargetKind
from core.untrusted import InputRejected, json_loads
from gateway import decision, jsonrpc, quotas, routing
from gateway.handoff import identity_headers
from gateway.paths import gateway_path
from limits.cache import LIMITS
from limits.selectors import rules_for
from servers.models import Server
from servers.selectors import server_for_gateway
from servers.trust import tool_trusts

TASKS_ELSEWHERE = (
    "Task requests (tasks/get, tasks/update, tasks/cancel) are carried by the registry's gateway itself "
    "(/<server path>/mcp), which names each task for its caller; a proxy that only checks calls here "
    "cannot carry them."
)
BEARER_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="mcp-gateway-registry"'}


def _principal(request, raw: str | None) -> Principal:
    if raw is not None:
        try:
            return principal_from_bearer(raw, report=False)  # handle() reports this check, with its server
        except exceptions.AuthenticationFailed as failed:
            raise ApiError(401, failed.get_codes(), str(failed.detail), BEARER_CHALLENGE) from None
    principal = principal_from_session(request._request)
    if principal is None:
        raise ApiError(
            401,
            ErrorCode.NOT_AUTHENTICATED,
            "Authentication credentials were not provided.",
            BEARER_CHALLENGE,
        )
    return principal


def _target(request) -> tuple[str, Server | None]:
    """(server path, the server or None) of X-Original-URL, resolved as the built-in gateway does:
    the raw path checked (no dot segments or encoded separators), then the longest registered prefix."""
    original = request.headers.get("X-Original-URL", "")
    if not original:
        raise ApiError(400, ErrorCode.BAD_REQUEST, "The X-Original-URL header is required.")
    try:
        target = gateway_path(urlsplit(original).path.encode("latin-1"))
    except (ValueError, UnicodeEncodeError):  # urlsplit's refusals (`http://[::1/alpha`), PathRefused
        raise ApiError(
            400, ErrorCode.BAD_REQUEST, "X-Original-URL is not a usable MCP endpoint URL."
        ) from None
    if target is None:
        raise ApiError(
            400, ErrorCode.BAD_REQUEST, "X-Original-URL names no MCP endpoint (/<server path>/mcp)."
        )
    server = server_for_gateway(target.candidates)
    return (target.candidates[0], None) if server is None else (server.path, server)


def _requested_path(request) -> str:
    """The server path X-Original-URL names as the client wrote it (what a token is bound to)."""
    return gateway_path(urlsplit(request.headers["X-Original-URL"]).path.encode("latin-1")).candidates[0]


SESSION_METHODS = ("GET", "DELETE")  # an MCP session's stream and its end: no JSON-RPC body


def _messages(request) -> list[jsonrpc.Message]:
    """Every message of the call, read by the gateway's one reader (gateway/jsonrpc.py) from X-Body or
    the request body, whatever its Content-Type. Without a body it refuses to guess: only a GET or DELETE
    (X-Original-Method) is judged, as the session itself (`initialize`)."""
    raw = request.headers.get("X-Body")
    if raw is None:
        raw = request.body.decode("utf-8", errors="replace")
    elif raw.lstrip().startswith("%"):
        raw = unquote(raw)
    if not raw.strip():
        original_method = request.headers.get("X-Original-Method", "").upper()
        if original_method in SESSION_METHODS:
            return [jsonrpc.Message(raw={}, kind="request", method=jsonrpc.INITIALIZE)]
        raise ApiError(
            400,
            ErrorCode.BAD_REQUEST,
            "No JSON-RPC body arrived: forward it (X-Body or the request body), or send X-Original-Method "
            "for a GET or DELETE.",
        )
    try:
        return jsonrpc.read(json_loads(raw))[1]
    except InputRejected as rejected:
        detail = "The body is not valid JSON." if rejected.unparsable else f"The body is refused: {rejected}"
        raise ApiError(400, ErrorCode.BAD_REQUEST, detail) from None
    except jsonrpc.BodyRefused as refused:
        raise ApiError(400, ErrorCode.BAD_REQUEST, str(refused)) from None


def _metric_server(request) -> str:
    """The server path a check was about, or "" when the request named none."""
    try:
        return _target(request)[0]
    except ApiError:
        return ""


class ValidateView(APIView):
    authentication_classes = []
    permission_classes = [AllowAny]
    parser_classes = []

    @documented(
        request=None,
        parameters=[
            header_parameter(
                "X-Original-URL",
                "the URL the client called; its first path segment names the server",
                required=True,
            ),
            header_parameter(
                "X-Body", "the JSON-RPC body of the call (optional; a JSON request body works too)"
            ),
            header_parameter(
                "X-Authorization", "the client's bearer credential, when Authorization is taken"
            ),
        ],
        errors=(400, 401, 403, 413, 501),
    )
    def handle(self, request, *args, **kwargs):
        """The check, reported as one `auth_request` metric: success means the call was allowed (200)."""
        started = time.perf_counter()
        raw = bearer_token(request, allow_x_authorization=True)
        principal, response = None, None
        try:
            principal = _principal(request, raw)
            response = self.check(request, principal)
            return response
        finally:
            report_auth_request(
                started=started,
                success=response is not None,
                principal=principal,
                raw=raw,
                server=_metric_server(request),
            )

    def check(self, request, principal: Principal) -> Response:
        """The one decision (gateway/decision.py), as the built-in gateway takes it."""
        server_path, server = _target(request)
        server_name = server_path.lstrip("/")
        target = Target(TargetKind.SERVER, server_path, tuple(server.tags or ()) if server else ())
        principal = principal.with_trust(tool_trusts([server_path]))  # what operators withhold
        rules = rules_for(LIMITS.epoch())

        async def decided() -> tuple[list, decision.Judgement]:  # every step, in one hop to the loop
            try:
                await decision.admit(principal, target, rules, audience=_requested_path(request))
            except routing.Refusal as refusal:
                bearer = refusal.code in (ErrorCode.TOKEN_AUDIENCE, ErrorCode.INSUFFICIENT_SCOPE)
                answer = {**refusal.headers, **(BEARER_CHALLENGE if bearer else {})}
                raise ApiError(refusal.status, refusal.code, refusal.detail, answer) from None
            messages = _messages(request)
            if any(m.method in jsonrpc.TASK_METHODS for m in messages):
                raise ApiError(501, ErrorCode.NOT_IMPLEMENTED, TASKS_ELSEWHERE)
            if invalid := next((m for m in messages if m.kind == "invalid"), None):
                raise ApiError(400, ErrorCode.BAD_REQUEST, jsonrpc.denial(principal, server_path, invalid))
            if server is None or not server.is_enabled:
                unknown = f"Server '{server_name}' is unknown or disabled."
                raise ApiError(403, ErrorCode.PERMISSION_DENIED, unknown)
            return messages, await decision.judged_calls(rules, principal, target, messages)

        messages, judged = async_to_sync(decided)()
        if judged.denied:
            raise ApiError(403, ErrorCode.PERMISSION_DENIED, next(iter(judged.denied.values())))
        if not judged.limits.allowed:
            status, _, text, _, limited = quotas.refusal(judged.limits)
            code = ErrorCode.THROTTLED if status == 429 else ErrorCode.REDIS_UNAVAILABLE
            raise ApiError(status, code, text, limited)
        method, tool = messages[0].method, messages[0].tool
        headers = {**identity_headers(principal, server_name, tool), **judged.limits.headers}
        body = {
            "valid": True,
            "username": principal.username,
            "scopes": list(principal.scopes),
            "method": method,
            "server_name": server_name,
            "tool_name": tool,
        }
        return Response(body, headers=headers)

    get = post = put = patch = delete = handle
