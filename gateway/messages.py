"""The JSON-RPC side of the gateway: every message of a POST (a batch included) is checked with the one
rule, `Principal.allows_mcp(server, method, tool)`; a denied request is answered by the gateway with a
JSON-RPC error and never forwarded; a `tools/list` result is cut to the tools the caller may call, in
JSON and in SSE answers alike."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from accounts.principal import Principal

FORBIDDEN = -32001  # a server-defined JSON-RPC error code: the caller may not do this
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
TOOLS_CALL = "tools/call"
TOOLS_LIST = "tools/list"
EVERY_ANSWER = (
    "*"  # in `tool_lists`: cut every tool list (an SSE-transport stream, whose requests went elsewhere)
)


def rule_method(method: str) -> str:
    """The method a scope rule is matched against. Notifications and pings belong to the session: who
    may initialize it may send them."""
    if method.startswith("notifications/") or method == "ping":
        return "initialize"
    return method


def error_message(request_id, code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


@dataclass
class Checked:
    """A POST body after the checks: what to forward, what the gateway answers itself, and the ids
    whose results are tool lists to filter."""

    batch: bool
    forward: list = field(default_factory=list)
    denied: list[dict] = field(default_factory=list)
    tool_lists: set = field(default_factory=set)
    calls: list[tuple[str, str | None]] = field(default_factory=list)  # (method, tool) of forwarded requests
    call_ids: list = field(default_factory=list)  # their ids (as `id_key` gives them), in the same order
    client_name: str = ""  # clientInfo.name of a forwarded `initialize`
    dropped: int = 0  # denied notifications: nobody to answer, not forwarded

    @property
    def untouched(self) -> bool:
        """Whether the server may receive the body exactly as the client sent it, and answer it as is."""
        return not self.denied and not self.dropped and not self.tool_lists

    def forward_body(self) -> bytes:
        payload = self.forward if self.batch else self.forward[0]
        return json.dumps(payload, separators=(",", ":")).encode()


class BodyRefused(ValueError):
    """A body the gateway cannot judge: not JSON, or not JSON-RPC. Answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def check_body(payload, principal: Principal, server_path: str) -> Checked:
    """Sort each message of a decoded POST body into forwarded or denied."""
    batch = isinstance(payload, list)
    messages = payload if batch else [payload]
    if not messages or not all(isinstance(message, dict) for message in messages):
        raise BodyRefused(
            INVALID_REQUEST, "The body must be a JSON-RPC message or a non-empty batch of them."
        )
    checked = Checked(batch=batch)
    for message in messages:
        method = message.get("method")
        if method is None:  # a client's answer to a server's request: part of a session it may use
            checked.forward.append(message)
            continue
        if not isinstance(method, str):
            raise BodyRefused(INVALID_REQUEST, "A JSON-RPC method must be a string.")
        params = message.get("params")
        tool = params.get("name") if method == TOOLS_CALL and isinstance(params, dict) else None
        if method == TOOLS_CALL and not isinstance(tool, str):
            tool = None
        allowed = principal.allows_mcp(server_path, rule_method(method), tool)
        if allowed:
            checked.forward.append(message)
            if "id" in message:
                checked.calls.append((method, tool))
                checked.call_ids.append(id_key(message["id"]))
                if method == TOOLS_LIST:
                    checked.tool_lists.add(id_key(message["id"]))
                if method == "initialize" and isinstance(params, dict):
                    info = params.get("clientInfo")
                    name = info.get("name") if isinstance(info, dict) else None
                    checked.client_name = name if isinstance(name, str) else ""
        elif "id" not in message:  # a denied notification has nobody to answer
            checked.dropped += 1
        else:
            target = f"tool '{tool}'" if method == TOOLS_CALL else f"'{method}'"
            checked.denied.append(
                error_message(
                    message["id"],
                    FORBIDDEN,
                    f"Access denied: '{principal.username}' may not call {target} on server '{server_path}'.",
                )
            )
    return checked


def id_key(request_id) -> str:
    return json.dumps(request_id)


def filter_answer(message, checked: Checked, principal: Principal, server_path: str):
    """A decoded answer with every tools/list result cut to the tools the caller may call."""
    if isinstance(message, list):
        return [filter_answer(item, checked, principal, server_path) for item in message]
    if not isinstance(message, dict):
        return message
    if EVERY_ANSWER not in checked.tool_lists and id_key(message.get("id")) not in checked.tool_lists:
        return message
    result = message.get("result")
    if isinstance(result, dict) and isinstance(result.get("tools"), list):
        tools = [
            tool
            for tool in result["tools"]
            if isinstance(tool, dict) and principal.allows_mcp(server_path, TOOLS_CALL, tool.get("name"))
        ]
        message = {**message, "result": {**result, "tools": tools}}
    return message


def failed_ids(message) -> set:
    """The ids of the error answers in a decoded answer (or batch of answers)."""
    answers = message if isinstance(message, list) else [message]
    return {id_key(a.get("id")) for a in answers if isinstance(a, dict) and "error" in a}


def merged_json(body: bytes, checked: Checked, principal: Principal, server_path: str) -> tuple[bytes, set]:
    """A JSON answer of the server, tool lists filtered and the gateway's denials added; and the ids the
    server answered with an error."""
    try:
        answer = json.loads(body)
    except ValueError:
        return body, set()  # not ours to repair: the client sees what the server sent
    failed = failed_ids(answer)
    filtered = filter_answer(answer, checked, principal, server_path)
    if checked.denied:
        filtered = [*(filtered if isinstance(filtered, list) else [filtered]), *checked.denied]
    if filtered is answer:
        return body, failed
    return json.dumps(filtered, separators=(",", ":")).encode(), failed


def sse_event(message) -> bytes:
    return b"event: message\ndata: " + json.dumps(message, separators=(",", ":")).encode() + b"\n\n"


class SseRewriter:
    """Reads an SSE answer event by event: tool lists filtered, error answers noted (`failed`),
    everything else passed byte for byte. Feed it chunks; it returns what can be sent so far."""

    def __init__(self, checked: Checked, principal: Principal, server_path: str, endpoint=None):
        self.checked, self.principal, self.server_path = checked, principal, server_path
        self.pending = b""
        self.failed: set = set()
        self.endpoint = endpoint  # SSE transport: rewrites an `endpoint` event's data (bytes -> bytes)

    def feed(self, chunk: bytes) -> bytes:
        self.pending += chunk.replace(b"\r\n", b"\n")
        out = []
        while b"\n\n" in self.pending:
            event, self.pending = self.pending.split(b"\n\n", 1)
            out.append(self._event(event) + b"\n\n")
        return b"".join(out)

    def close(self) -> bytes:
        rest, self.pending = self.pending, b""
        return rest

    def _event(self, event: bytes) -> bytes:
        lines = event.split(b"\n")
        data = b"\n".join(line[5:].lstrip(b" ") for line in lines if line.startswith(b"data:"))
        if self.endpoint is not None and b"event: endpoint" in lines:
            return b"event: endpoint\ndata: " + self.endpoint(data)
        try:
            message = json.loads(data) if data else None
        except ValueError:
            return event
        self.failed |= failed_ids(message)
        filtered = filter_answer(message, self.checked, self.principal, self.server_path)
        if filtered is message:
            return event
        others = [line for line in lines if not line.startswith(b"data:")]
        return b"\n".join([*others, b"data: " + json.dumps(filtered, separators=(",", ":")).encode()])


def stream_checks() -> Checked:
    """The checks of an SSE-transport stream: no requests of its own, every tool list cut."""
    return Checked(batch=False, tool_lists={EVERY_ANSWER})


DENIED_METHOD = "gateway/denied"


def stand_in(denied: dict) -> dict:
    """A request no server implements, in place of a denied one (SSE transport): the server answers its
    id with "method not found" on the stream, so the client is not left waiting."""
    return {"jsonrpc": "2.0", "id": denied["id"], "method": DENIED_METHOD}
