"""The one reader of JSON-RPC bodies and the one method rule, used by the built-in gateway and `/validate`.

A body is one message or a non-empty batch of them. Each message is sorted into a request (a `method` and
an `id`), a notification (a `method`, no `id`), or a client's answer to a server's request (an `id` and
exactly one of `result` / `error`, no method); anything else is invalid and is never forwarded.

Scope rules are matched against a message's method exactly as it is spelled. Notifications, `ping`,
`server/discover` (2026-07-28's handshake) and `subscriptions/listen` (its stream) belong to the session:
who may `initialize` a server may send them. A method that is not exactly a method of the MCP
specification (`"Tools/Call"`, `"tools/call "`) is an "other method": only a rule that names it, or one
that grants every method and every tool, allows it, so a server that normalises method names can never
be made to run a tool the caller may not call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from accounts.principal import Principal
from accounts.scope_rules import SESSION_METHODS, STANDARD_METHODS

FORBIDDEN = -32001  # a server-defined JSON-RPC error code: the caller may not do this
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603
HEADER_MISMATCH = -32020  # 2026-07-28: the protocol headers disagree with the body
TOOLS_CALL = "tools/call"
TOOLS_LIST = "tools/list"
PROMPTS_GET = "prompts/get"
PROMPTS_LIST = "prompts/list"
INITIALIZE = "initialize"
# The tasks extension's requests (gateway/tasks.py): each is judged as a call of the tool its task runs.
TASK_METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})

# The params key a method's target is named by (the 2026-07-28 `Mcp-Name` header mirrors it).
NAME_KEYS = {
    TOOLS_CALL: "name",
    PROMPTS_GET: "name",
    "resources/read": "uri",
    "resources/subscribe": "uri",
    "resources/unsubscribe": "uri",
    **dict.fromkeys(TASK_METHODS, "taskId"),
}


class BodyRefused(ValueError):
    """A body the gateway cannot judge: not JSON-RPC. Answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Message:
    """One JSON-RPC message of a body, as the rules see it."""

    raw: dict
    kind: str  # "request", "notification", "response" or "invalid"
    method: str | None = None
    tool: str | None = None  # tools/call: params.name when it is a string; a task request: its task's tool

    @property
    def has_id(self) -> bool:
        return "id" in self.raw

    @property
    def target(self) -> str | None:
        """What the message names (params.name or params.uri), for the Mcp-Name header's check."""
        params = self.raw.get("params")
        if not isinstance(params, dict):
            return None
        key = NAME_KEYS.get(self.method or "")
        value = params.get(key) if key else params.get("name", params.get("uri"))
        return value if isinstance(value, str) else None


def _message(raw: dict) -> Message:
    method = raw.get("method")
    if isinstance(method, str):
        params = raw.get("params")
        tool = params.get("name") if method == TOOLS_CALL and isinstance(params, dict) else None
        if method == TOOLS_CALL and (not isinstance(tool, str) or not tool):
            return Message(raw=raw, kind="invalid", method=method)  # a call of no tool
        if method in TASK_METHODS:  # the tool its task runs, known once the gateway resolved it (tasks.py)
            tool = getattr(raw, "tool", None) or None
        kind = "request" if "id" in raw else "notification"
        return Message(raw=raw, kind=kind, method=method, tool=tool)
    if method is None and "method" not in raw and "id" in raw and (("result" in raw) != ("error" in raw)):
        if not any(key.lower() == "method" for key in raw):
            return Message(raw=raw, kind="response")
    return Message(raw=raw, kind="invalid")


def read(payload) -> tuple[bool, list[Message]]:
    """(whether the body is a batch, its messages); BodyRefused when it is not JSON-RPC at all."""
    batch = isinstance(payload, list)
    items = payload if batch else [payload]
    if not items or not all(isinstance(item, dict) for item in items):
        raise BodyRefused(
            INVALID_REQUEST, "The body must be a JSON-RPC message or a non-empty batch of them."
        )
    return batch, [_message(item) for item in items]


def rule_method(method: str) -> str:
    """The method a scope rule is matched against: the session's own messages count as `initialize`."""
    return INITIALIZE if method in SESSION_METHODS else method


def allowed(principal: Principal, server_path: str, message: Message) -> bool:
    """Whether the caller may send this message to the server: the one rule of the gateway and /validate."""
    if message.kind == "response":
        return principal.allows_mcp(server_path, INITIALIZE)  # an answer belongs to the session
    if message.kind == "invalid" or message.method is None:
        return False
    method = rule_method(message.method)
    if method in TASK_METHODS:  # whoever may still call the task's tool there, as the task's own caller
        return message.tool is not None and principal.allows_mcp(server_path, TOOLS_CALL, message.tool)
    if method not in STANDARD_METHODS:
        return principal.allows_other_mcp(server_path, message.method)
    if method == PROMPTS_GET and principal.trust and principal.prompt_refusal(server_path, message.target):
        return False
    return principal.allows_mcp(server_path, method, message.tool)


def denial(principal: Principal, server_path: str, message: Message) -> str:
    """Why a message is refused, in the words the caller sees."""
    if message.kind == "invalid" and message.method == TOOLS_CALL:
        return "tools/call needs params.name, the tool to call."
    if message.kind == "invalid":
        return "A JSON-RPC message needs a string method, or an id and one of result or error."
    calls_tool = message.method == TOOLS_CALL or message.method in TASK_METHODS
    if calls_tool and (withheld := principal.tool_refusal(server_path, message.tool)):
        return withheld
    if message.method == PROMPTS_GET and (withheld := principal.prompt_refusal(server_path, message.target)):
        return withheld
    target = f"tool '{message.tool}'" if calls_tool else f"'{message.method}'"
    return f"Access denied: '{principal.username}' may not call {target} on server '{server_path}'."


def error_message(request_id, code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def id_key(request_id) -> str:
    return json.dumps(request_id)
