"""One A2A request as the gateway judges and forwards it, in either binding: JSON-RPC (`POST .../a2a`,
the method in the body) or HTTP+JSON (REST: the method and the task in the path, `POST
.../a2a/message:send`, `GET .../a2a/tasks/{id}`, v0.3's under `/v1/`). A REST request is judged by its
v1.0 method name. Refusals are in the binding's own error shape."""

from __future__ import annotations

import re
from dataclasses import dataclass

from agents.a2a import a2a_interfaces
from gateway import jsonrpc, quotas

ACCESS_DENIED = -32050  # the gateway's own (A2A's -32001 is "task not found")
INVALID_PARAMS = -32602
REST_STATUS = {
    ACCESS_DENIED: (403, "PERMISSION_DENIED"),
    quotas.RATE_LIMITED: (429, "RESOURCE_EXHAUSTED"),
    -32001: (404, "NOT_FOUND"),
    -32002: (400, "FAILED_PRECONDITION"),  # task not cancelable
    -32004: (400, "FAILED_PRECONDITION"),  # unsupported operation
    INVALID_PARAMS: (400, "INVALID_ARGUMENT"),
    jsonrpc.INTERNAL_ERROR: (502, "UNAVAILABLE"),
}

_ID = r"(?P<id>[^/:]+)"
REST_ROUTES = (
    (("POST",), r"/message:send", "SendMessage"),
    (("POST",), r"/message:stream", "SendStreamingMessage"),
    (("GET",), r"/tasks", "ListTasks"),
    (("GET",), rf"/tasks/{_ID}", "GetTask"),
    (("POST",), rf"/tasks/{_ID}:cancel", "CancelTask"),
    (("GET", "POST"), rf"/tasks/{_ID}:subscribe", "SubscribeToTask"),
    (("POST",), rf"/tasks/{_ID}/pushNotificationConfigs", "CreateTaskPushNotificationConfig"),
    (("GET",), rf"/tasks/{_ID}/pushNotificationConfigs", "ListTaskPushNotificationConfigs"),
    (("GET",), rf"/tasks/{_ID}/pushNotificationConfigs/[^/]+", "GetTaskPushNotificationConfig"),
    (("DELETE",), rf"/tasks/{_ID}/pushNotificationConfigs/[^/]+", "DeleteTaskPushNotificationConfig"),
    (("GET",), r"/extendedAgentCard|/card", "GetExtendedAgentCard"),
)
_COMPILED = tuple((methods, re.compile(pattern), name) for methods, pattern, name in REST_ROUTES)


@dataclass
class Call:
    method: str
    params: dict  # what names tasks, contexts and push-notification URLs
    rest: bool
    legacy: bool  # v0.3
    request_id: object = None
    path: str = ""  # REST: what follows `.../a2a`, with its query
    path_task: str | None = None  # REST: the task its path names
    query: str = ""  # REST: the query string
    trace: object = None  # its span when tracing is on (gateway/tracing.py)

    def refused(
        self, code: int, text: str, data: dict | None = None, status: int | None = None
    ) -> tuple[int, dict]:
        """(HTTP status, body) of the gateway's own answer: a JSON-RPC error (200; 502 when the agent
        could not answer; `status` when given, as a limit's refusal gives it), or REST's {"error": {code,
        status, message}} (with `data` under `details`)."""
        if not self.rest:
            status = status or (502 if code == jsonrpc.INTERNAL_ERROR else 200)
            message = jsonrpc.error_message(self.request_id, code, text)
            if data is not None:
                message["error"]["data"] = data
            return status, message
        status_of, name = REST_STATUS.get(code, (502, "UNAVAILABLE"))
        status = status or status_of
        error = {"code": status, "status": name, "message": text}
        if data is not None:
            error["details"] = [data]
        return status, {"error": error}

    def result(self, payload):
        """The result an answer (or a streamed event) carries."""
        if not isinstance(payload, dict):
            return None
        return payload if self.rest else payload.get("result")

    def upstream_url(self, agent) -> str:
        """The agent's own URL for the call: its interface of the binding and the call's protocol version,
        else any of the binding, else (JSON-RPC) the card's main URL."""
        binding = "HTTP+JSON" if self.rest else "JSONRPC"
        interfaces = [i for i in a2a_interfaces(agent) if i["protocolBinding"] == binding]
        chosen = next(
            (i for i in interfaces if str(i.get("protocolVersion", "")).startswith("0.") == self.legacy),
            interfaces[0] if interfaces else None,
        )
        if not self.rest:
            return chosen["url"] if chosen else agent.url
        return (chosen["url"].rstrip("/") if chosen else "") + self.path


def not_jsonrpc(body) -> str | None:
    """Why a parsed body is not one A2A JSON-RPC request, or None."""
    if not isinstance(body, dict) or body.get("jsonrpc") != "2.0" or not isinstance(body.get("method"), str):
        return "An A2A request is one JSON-RPC 2.0 request."
    return None


def from_jsonrpc(message: dict) -> Call:
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    method = message["method"]
    return Call(method, params, rest=False, legacy="/" in method, request_id=message.get("id"))


def from_rest(http_method: str, rest: str, query: str, body) -> Call | None:
    """The call a REST request makes, or None when it names no A2A operation."""
    legacy = rest.startswith("/v1/")
    path = rest[3:] if legacy else rest
    for methods, pattern, name in _COMPILED:
        found = pattern.fullmatch(path)
        if http_method in methods and found:
            params = dict(body) if isinstance(body, dict) else {}
            full = rest + (f"?{query}" if query else "")
            task = found.groupdict().get("id")
            return Call(name, params, rest=True, legacy=legacy, path=full, path_task=task, query=query)
    return None
