"""A virtual server published as an A2A agent (its definition's `a2a`), at `/<path>/a2a`: its tools are the
agent's skills, so an A2A client reaches MCP servers through the same URL and the same judge.

- The card (`/<path>/a2a/.well-known/agent-card.json`, v1.0 with its v0.3 fields) has one `AgentSkill` per
  tool the caller's own `tools/list` would show: `id` the tool's name as clients see it, its description,
  the virtual server as a tag, the description's first sentence as an example, and the OAuth scope a
  token needs (`mcp`) in its `securityRequirements`. A2A has no per-skill input schema yet: the tools'
  schemas are in an `AgentExtension` of the registry's own URI (TOOL_SCHEMAS).
- `SendMessage` (JSON-RPC, v1.0; `message/send` of v0.3) with a data part
  `{"skill": "<tool>", "arguments": {...}}`, or a text part whose first word names the skill (for simple
  clients), is a `tools/call` of that tool, judged and
  answered exactly as one through the virtual server (gateway/virtual/answers.tool_called); its result
  comes back as a completed task with the result as an artifact (text parts, and structured content as a
  data part), or a failed one when the tool answered `isError`.
- A tool still running after VIRTUAL_A2A_ANSWER_SECONDS is answered with a `WORKING` task, finished in
  the background: `GetTask` reads it (from any web process: it is kept in Redis), `CancelTask` stops the
  call; another caller's task is "task not found". `SubscribeToTask` is not served (no streaming).
- Both bindings: JSON-RPC at the URL, and HTTP+JSON under it (`POST .../a2a/message:send`,
  `GET .../a2a/tasks/{id}`, `POST .../a2a/tasks/{id}:cancel`; v0.3's under `/v1/`), read by the
  gateway's one reader of A2A calls (gateway/a2a/calls.py).
- Every refusal (rights, pins, blocks, quarantine, limits, a missing credential) is the error the
  binding takes, before anything reaches a member; a tool the caller cannot see is "not found"."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

from channels.db import database_sync_to_async
from django.conf import settings

from agents.cards import SECURITY_SCHEME
from core.epochs import MISSING
from core.errors import ErrorCode
from core.public_url import base_url_of_scope
from core.targets import Target, TargetKind
from core.untrusted import InputRejected, json_loads
from gateway import decision, forwarding, headers, jsonrpc, quotas, sessions
from gateway.a2a import calls
from gateway.epochs import request_epochs
from gateway.front import Front, read_body
from gateway.paths import AgentPath, agent_path
from gateway.routing import NotOurs, Refusal, caller, challenge
from gateway.virtual import answers
from gateway.virtual import lists as virtual_lists
from virtual_servers.selectors import virtual_for_gateway, virtual_for_gateway_cached

CARD_PATH = "/.well-known/agent-card.json"
TOOL_SCHEMAS = "https://modelcontextprotocol.io/registry/a2a/tool-schemas/v1"
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
UNSUPPORTED = -32004  # A2A's UnsupportedOperationError
TASK_NOT_FOUND = -32001  # A2A's TaskNotFoundError
TASK_NOT_CANCELABLE = -32002  # A2A's TaskNotCancelableError


class VirtualAgentFace(Front):
    """Serves `/<path>/a2a` of a virtual server published as an A2A agent; hands every other path (an
    agent's, or a page's) to `fallback` (gateway/a2a/app.py AgentGateway)."""

    def target(self, raw_path: bytes):
        return agent_path(raw_path)

    def methods(self, target) -> tuple[str, ...]:
        return ("GET", "POST")

    def challenge(self, scope, target, refusal) -> dict[str, str]:
        if refusal.status == 401 or refusal.code == ErrorCode.INSUFFICIENT_SCOPE:
            return {
                "WWW-Authenticate": challenge(
                    base_url_of_scope(scope), target.candidates[0], "a2a", refusal.code
                )
            }
        return {}

    async def serve(self, scope, receive, send, target: AgentPath) -> None:
        epochs = await request_epochs()
        virtual = virtual_for_gateway_cached(target.candidates, epochs.virtuals)
        if virtual is MISSING:
            virtual = await database_sync_to_async(virtual_for_gateway)(target.candidates, epochs.virtuals)
        if virtual is None or not virtual.a2a or not virtual.is_enabled:
            raise NotOurs
        if problem := headers.origin_problem(scope):
            raise Refusal(403, ErrorCode.PERMISSION_DENIED, problem)
        authorization, cookie = headers.first(scope, b"authorization"), headers.first(scope, b"cookie")
        principal = await database_sync_to_async(caller)(authorization, cookie, epochs.principals)
        rules = await quotas.rules(epochs.limits)
        reached = Target(TargetKind.VIRTUAL_SERVER, virtual.path)
        await decision.admit(principal, reached, rules, audience=target.candidates[0])
        method, url = scope["method"], f"{base_url_of_scope(scope)}{virtual.path}/a2a"
        if target.rest == CARD_PATH:
            if method != "GET":
                raise Refusal(
                    405, ErrorCode.METHOD_NOT_ALLOWED, "The card is read with GET.", {"Allow": "GET"}
                )
            tools = await virtual_lists.merged(
                virtual, await answers.caller_for(virtual, principal, epochs), "tools/list"
            )
            return await forwarding.json_answer(send, 200, card(virtual, url, tools))
        raw = await read_body(receive, settings.MAX_REQUEST_BODY_BYTES) if method == "POST" else b""
        try:
            body = json_loads(raw) if raw else {}
        except InputRejected as rejected:
            code = jsonrpc.PARSE_ERROR if rejected.unparsable else jsonrpc.INVALID_REQUEST
            return await forwarding.json_answer(send, 400, jsonrpc.error_message(None, code, str(rejected)))
        if target.rest:  # HTTP+JSON: the operation by its path (v0.3's under /v1/)
            query = scope.get("query_string", b"").decode("latin-1")
            call = calls.from_rest(method, target.rest, query, body)
            if call is None:
                raise Refusal(404, ErrorCode.NOT_FOUND, "No A2A operation has this path.")
        else:
            if method != "POST":
                raise Refusal(
                    405, ErrorCode.METHOD_NOT_ALLOWED, "A2A JSON-RPC requests are POSTed.", {"Allow": "POST"}
                )
            if invalid := calls.not_jsonrpc(body):
                return await forwarding.json_answer(
                    send, 400, jsonrpc.error_message(None, jsonrpc.INVALID_REQUEST, invalid)
                )
            call = calls.from_jsonrpc(body)
        return await forwarding.json_answer(send, *await _handled(virtual, principal, epochs, call))


SENDS = ("SendMessage", "message/send")
TASK_READS = ("GetTask", "CancelTask", "tasks/get", "tasks/cancel")


async def _handled(virtual, principal, epochs, call: calls.Call) -> tuple[int, dict]:
    """(HTTP status, body) of one A2A operation, in the call's binding and version."""
    if call.method in TASK_READS:
        return await _task_asked(virtual, principal, call)
    if call.method in SENDS:
        return await _sent(virtual, principal, epochs, call)
    text = f"{call.method} is not served here: a virtual server answers each message at once."
    return call.refused(UNSUPPORTED, text)


def _answered(call: calls.Call, result: dict) -> tuple[int, dict]:
    """(200, the binding's answer carrying `result`)."""
    if call.rest:
        return 200, result
    return 200, {"jsonrpc": "2.0", "id": call.request_id, "result": result}


def card(virtual, url: str, tools: list[dict]) -> dict:
    """The agent card of a virtual server, its skills the tools as `tools/list` shows them to the caller."""
    skills = []
    for tool in tools:
        description = str(tool.get("description") or tool["name"])
        skill = {
            "id": tool["name"],
            "name": str(tool.get("title") or tool["name"]),
            "description": description,
            "tags": [virtual.path.strip("/")],
            "examples": [description.split(". ")[0][:200]],
            "inputModes": ["application/json", "text/plain"],
            "outputModes": ["application/json", "text/plain"],
            "securityRequirements": [{"schemes": {SECURITY_SCHEME: {"list": ["mcp"]}}}],
        }
        skills.append(skill)
    schemas = {tool["name"]: tool.get("inputSchema", {"type": "object"}) for tool in tools}
    interfaces = [
        {"url": url, "protocolBinding": binding, "protocolVersion": version}
        for binding in ("JSONRPC", "HTTP+JSON")
        for version in ("1.0", "0.3")
    ]
    return {
        "name": virtual.name,
        "description": virtual.description or f"The tools of {virtual.name}.",
        "version": "1.0.0",
        "supportedInterfaces": interfaces,
        "url": url,
        "preferredTransport": "JSONRPC",
        "protocolVersion": "0.3.0",
        "capabilities": {
            "streaming": False,
            "extensions": [
                {
                    "uri": TOOL_SCHEMAS,
                    "description": "The input schema of each skill (an MCP tool), by skill id.",
                    "required": False,
                    "params": {"schemas": schemas},
                }
            ],
        },
        "defaultInputModes": ["application/json", "text/plain"],
        "defaultOutputModes": ["application/json", "text/plain"],
        "skills": skills,
        "securitySchemes": {SECURITY_SCHEME: {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
        "securityRequirements": [{"schemes": {SECURITY_SCHEME: {"list": []}}}],
    }


def _asked(message) -> tuple[str, dict] | None:
    """(the skill a message names, its arguments): a data part `{skill, arguments}`, else a text part whose
    first word is the skill."""
    parts = message.get("parts") if isinstance(message, dict) else None
    for part in parts if isinstance(parts, list) else []:
        data = part.get("data") if isinstance(part, dict) else None
        if isinstance(data, dict) and isinstance(data.get("skill"), str):
            return data["skill"], data.get("arguments", {})
    for part in parts if isinstance(parts, list) else []:
        text = part.get("text") if isinstance(part, dict) else None
        if isinstance(text, str) and text.split():
            return text.split()[0], {}
    return None


async def _sent(virtual, principal, epochs, call: calls.Call) -> tuple[int, dict]:
    message = call.params.get("message")
    request_id = call.request_id if call.request_id is not None else 1
    asked = _asked(message)
    if asked is None:
        problem = (
            'Name a skill: a data part {"skill": "<tool>", "arguments": {...}}, or a text starting with it.'
        )
        return call.refused(INVALID_PARAMS, problem)
    skill, arguments = asked
    if not isinstance(arguments, dict):
        return call.refused(INVALID_PARAMS, "arguments must be an object.")
    context = message.get("contextId") if isinstance(message.get("contextId"), str) else str(uuid.uuid4())
    running = asyncio.create_task(
        answers.tool_called(virtual, principal, epochs, skill, arguments, request_id)
    )
    done, _ = await asyncio.wait({running}, timeout=settings.VIRTUAL_A2A_ANSWER_SECONDS)
    if running not in done:  # a slow tool: a working task, finished in the background
        task_id, owner = str(uuid.uuid4()), sessions.owner(principal)
        working = _task(call.legacy, task_id, context, skill, message, None)
        kept = {"owner": owner, "legacy": call.legacy, "skill": skill, "task": working}
        await sessions.keep(sessions.Kind.VIRTUAL_A2A_TASK, virtual.path, task_id, kept)
        finishing = asyncio.create_task(_finished(virtual.path, task_id, kept, running, skill, message))
        _BACKGROUND.add(finishing)
        finishing.add_done_callback(_BACKGROUND.discard)
        return _answered(call, working if call.legacy else {"task": working})
    reply = running.result()
    if "error" in reply:
        code = reply["error"]["code"]
        return call.refused(
            calls.ACCESS_DENIED if code == jsonrpc.FORBIDDEN else code, reply["error"]["message"]
        )
    task = _task(call.legacy, str(uuid.uuid4()), context, skill, message, reply)
    return _answered(call, task if call.legacy else {"task": task})


_BACKGROUND: set[asyncio.Task] = set()  # slow tools' tasks, held until they end
POLL_SECONDS = 0.5


async def _finished(path: str, task_id: str, kept: dict, running: asyncio.Task, skill: str, message) -> None:
    """A slow tool's task carried to its end: its result kept for the client to get, or the call stopped
    when the client cancels the task (from any web process: the flag is in the kept record)."""
    while not running.done():
        await asyncio.wait({running}, timeout=POLL_SECONDS)
        current = await sessions.record(sessions.Kind.VIRTUAL_A2A_TASK, path, task_id)
        if current is not None and current.get("cancelled") and not running.done():
            running.cancel()
            return
    try:
        reply = running.result()
    except (asyncio.CancelledError, Exception) as failed:  # noqa: BLE001 - the task says it failed
        reply = {
            "error": {
                "code": jsonrpc.INTERNAL_ERROR,
                "message": f"The tool failed ({type(failed).__name__}).",
            }
        }
    context = kept["task"]["contextId"]
    final = _task(kept["legacy"], task_id, context, skill, message, reply)
    await sessions.keep(sessions.Kind.VIRTUAL_A2A_TASK, path, task_id, {**kept, "task": final})


STATES = {  # (v1.0, v0.3) of each state the face shows
    "working": ("TASK_STATE_WORKING", "working"),
    "completed": ("TASK_STATE_COMPLETED", "completed"),
    "failed": ("TASK_STATE_FAILED", "failed"),
    "canceled": ("TASK_STATE_CANCELED", "canceled"),
}
TERMINAL = ("completed", "failed", "canceled")


def _task(
    legacy: bool, task_id: str, context: str, skill: str, message, reply: dict | None, state=None
) -> dict:
    """An A2A task of a tool's call in the binding's version: working while `reply` is None, else its
    result as the artifact (or its error as the status message)."""
    parts: list[dict] = []
    said = None
    if reply is None:
        state = state or "working"
    elif "error" in reply:
        state, said = "failed", str(reply["error"].get("message", ""))
    else:
        result = reply.get("result") or {}
        texts = [item["text"] for item in result.get("content") or [] if item.get("type") == "text"]
        data = result.get("structuredContent") if isinstance(result.get("structuredContent"), dict) else None
        kind = {"kind": "text"} if legacy else {}
        parts = [{**kind, "text": text} for text in texts]
        if data:
            parts.append({"kind": "data", "data": data} if legacy else {"data": data})
        state = "failed" if result.get("isError") else "completed"
    status = {"state": STATES[state][1 if legacy else 0], "timestamp": _now()}
    if said:
        text = {"kind": "text", "text": said} if legacy else {"text": said}
        role = "agent" if legacy else "ROLE_AGENT"
        status["message"] = {
            "messageId": str(uuid.uuid4()),
            "role": role,
            "parts": [text],
            "contextId": context,
        }
        if legacy:
            status["message"]["kind"] = "message"
    task = {
        "id": task_id,
        "contextId": context,
        "status": status,
        "artifacts": [{"artifactId": f"{task_id}-result", "name": skill, "parts": parts}] if parts else [],
        "history": [message],
    }
    return {"kind": "task", **task} if legacy else task


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


async def _task_asked(virtual, principal, call: calls.Call) -> tuple[int, dict]:
    """`GetTask` or `CancelTask` (v0.3 `tasks/get`, `tasks/cancel`) of a slow tool's task: the caller's own
    only (any other is "task not found", A2A's -32001)."""
    task_id = call.path_task if call.rest else call.params.get("id")
    kept = (
        await sessions.record(sessions.Kind.VIRTUAL_A2A_TASK, virtual.path, str(task_id)) if task_id else None
    )
    if kept is None or kept.get("owner") != sessions.owner(principal):
        return call.refused(TASK_NOT_FOUND, "Task not found.")
    task = kept["task"]
    if call.method in ("CancelTask", "tasks/cancel"):
        shown = next(name for name, (new, old) in STATES.items() if task["status"]["state"] in (new, old))
        if shown in TERMINAL:
            return call.refused(TASK_NOT_CANCELABLE, f"The task is {shown}: it cannot be cancelled.")
        message = task["history"][0] if task["history"] else {}
        task = _task(
            kept["legacy"], task["id"], task["contextId"], kept["skill"], message, None, state="canceled"
        )
        await sessions.keep(
            sessions.Kind.VIRTUAL_A2A_TASK,
            virtual.path,
            task["id"],
            {**kept, "task": task, "cancelled": True},
        )
    return _answered(call, task)
