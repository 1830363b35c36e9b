"""A2A agents as MCP tools on a virtual server (its definition's `agents`): each skill of an agent's card is
a tool, `<key>__<skill id>`, described by the skill, taking `{message: string, data?: object}` (the skill's
examples shown as the message's examples). A call is an A2A `SendMessage` to the agent (JSON-RPC; to an
agent whose card names only v0.3, its `message/send`, the answers read back into v1.0's shape),
through the pipeline's stages: the one judge at the agent (its quarantine, the caller's rule for
`SendMessage` on the agent's path, the limits of the agent and of the virtual server in one count), the one
credential resolver and the fair share (gateway/exchange.py). Rights are the agent's: a caller who may not
message it, or cannot see it, does not see its tools, and calling one is "Unknown tool".

The conversation continues across calls: the `contextId` the agent answers is kept per MCP session and
agent, and sent with the next message. The answer becomes the tool's result: text parts as text, data
parts as structured content, files as embedded resources; a task that fails, is rejected or cancelled is
a result with `isError`.

A task the agent has not finished when it answers becomes an MCP task (gateway/tasks.py) when the call
declared the tasks extension: `SUBMITTED`/`WORKING` → `working`, `INPUT_REQUIRED`/`AUTH_REQUIRED` →
`input_required` with the agent's question as an elicitation (`tasks/update` sends the answer to the
agent's task), `COMPLETED` → `completed`, `CANCELED` → `cancelled`, `FAILED`/`REJECTED` → `failed`;
`tasks/cancel` is `CancelTask`. Without the extension, a working task is polled (`GetTask`) until it ends,
for at most AGENT_TOOL_WAIT_SECONDS (a call that asked for progress is answered on an event stream, a
progress notification for each poll), and a task that asks for input gives its question as the result
(the next call, in the same context, answers it)."""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid

from channels.db import database_sync_to_async
from django.conf import settings
from django.utils import timezone

from agents.a2a import a2a_interfaces
from agents.policies import agent_usable, agents_usable
from core.targets import Target, TargetKind
from core.timestamps import rfc3339
from gateway import decision, exchange, jsonrpc, quotas, sessions, streams, tasks, upstream
from gateway.a2a import calls
from gateway.deferred import STATELESS_RESULT
from gateway.routing import Refusal
from gateway.sign_in import sign_in_refused
from gateway.virtual import sessions as virtual_sessions
from gateway.virtual.members import Caller
from servers.upstream_auth import CredentialMissing, CredentialUnavailable

SEPARATOR = "__"
MESSAGE_MAX_LENGTH = 100_000
INVALID_PARAMS = -32602
TERMINAL = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}
ASKING = {"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"}
POLL_SECONDS = 0.5
_UNNAMEABLE = re.compile(r"[^A-Za-z0-9_.-]")


def tool_name(key: str, skill_id: str) -> str:
    return _UNNAMEABLE.sub("_", f"{key}{SEPARATOR}{skill_id}")[:128]


def tools_of(key: str, agent) -> list[tuple[str, str, dict]]:
    """(tool name, skill id, the tool as clients see it) for each skill of the agent's card."""
    found = []
    for skill in agent.skills if isinstance(agent.skills, list) else []:
        if not isinstance(skill, dict) or not isinstance(skill.get("id"), str) or not skill["id"]:
            continue
        examples = [e for e in skill.get("examples") or [] if isinstance(e, str)][:10]
        message = {"type": "string", "description": f"What to ask {agent.name}."}
        if examples:
            message["examples"] = examples
        name = tool_name(key, skill["id"])
        described = str(skill.get("description") or skill.get("name") or skill["id"])
        tool = {
            "name": name,
            "title": str(skill.get("name") or skill["id"]),
            "description": f"{described} (the A2A agent {agent.name})",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "message": message,
                    "data": {"type": "object", "description": "structured input"},
                },
                "required": ["message"],
            },
        }
        found.append((name, skill["id"], tool))
    return found


def _usable(principal, agent) -> bool:
    return agent_usable(principal, agent.path) is not None


async def listed(virtual, caller: Caller) -> list[dict]:
    """The agents' tools the caller may use (those of agents it sees and may message), in one query."""
    if not virtual.agents:
        return []
    agents = [agent for _, agent in virtual.agents]
    usable = await database_sync_to_async(agents_usable)(caller.principal, agents)
    return [
        tool for key, agent in virtual.agents if agent.pk in usable for _, _, tool in tools_of(key, agent)
    ]


def owner_of(virtual, name) -> tuple[str, object, str] | None:
    """(key, agent, skill id) of the agent tool a name clients see names, or None."""
    if not isinstance(name, str) or SEPARATOR not in name:
        return None
    for key, agent in virtual.agents:
        for tool, skill, _ in tools_of(key, agent):
            if tool == name:
                return key, agent, skill
    return None


async def called(
    virtual, caller: Caller, message: dict, owner: tuple[str, object, str], progress=None
) -> dict:
    """The JSON-RPC answer to a `tools/call` of an agent's tool; `progress(n, text)`, when given, is told
    each poll of a task the agent is still working on (the caller asked for progress: `streamed`)."""
    key, agent, skill = owner
    request_id = message["id"]
    arguments = (message.get("params") or {}).get("arguments")
    arguments = arguments if isinstance(arguments, dict) else {}
    text, data = arguments.get("message"), arguments.get("data")
    if not isinstance(text, str) or not text or len(text) > MESSAGE_MAX_LENGTH:
        return jsonrpc.error_message(
            request_id, INVALID_PARAMS, f"message is text of 1 to {MESSAGE_MAX_LENGTH} characters."
        )
    if data is not None and not isinstance(data, dict):
        return jsonrpc.error_message(request_id, INVALID_PARAMS, "data must be an object.")
    principal = caller.principal
    if not await database_sync_to_async(_usable)(principal, agent):
        return jsonrpc.error_message(
            request_id, INVALID_PARAMS, f"Unknown tool: {str(message['params'].get('name'))[:200]}"
        )
    if refused := await _judged(virtual, caller, agent, request_id):
        return refused
    contexts = caller.record.setdefault("agent_contexts", {})
    parts = [{"text": text}, *([{"data": data}] if data else [])]
    sent = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": parts}
    if isinstance(contexts.get(key), str):
        sent["contextId"] = contexts[key]
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": sent, "metadata": {"skill": skill}},
    }
    try:
        answered = await _asked(caller, agent, request)
        task = answered.get("task")
        if isinstance(task, dict) and _state(task) not in TERMINAL and tasks.declares(message):
            await _keep_context(caller, key, task.get("contextId"))
            handle = tasks.Handle(
                sessions.owner(principal),
                virtual.path,
                AGENT_MEMBER + key,
                str(task.get("id")),
                owner_name(owner),
            )
            result = {"resultType": "task", **_task_shape(tasks.mint(handle), task, agent)}
            return {"jsonrpc": "2.0", "id": request_id, "result": result}
        deadline = time.monotonic() + settings.AGENT_TOOL_WAIT_SECONDS
        while (
            isinstance(task, dict) and _state(task) not in TERMINAL | ASKING and time.monotonic() < deadline
        ):
            await asyncio.sleep(POLL_SECONDS)
            got = {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task.get("id")}}
            task = await _asked(caller, agent, got)
            if progress is not None:
                shown = STATUS.get(_state(task), "working")
                await progress(_status_text(task) or f"{agent.name}: {shown}")
    except _AgentFailed as failed:
        return jsonrpc.error_message(request_id, jsonrpc.INTERNAL_ERROR, str(failed))
    except CredentialMissing as missing:
        return jsonrpc.error_message(request_id, jsonrpc.FORBIDDEN, str(missing))
    await _keep_context(caller, key, (task or answered.get("message") or {}).get("contextId"))
    result = _result(task, answered.get("message"), agent)
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


class _AgentFailed(Exception):
    pass


def progress_token(message: dict):
    """The progress token a `tools/call` asked for (`params._meta.progressToken`), or None."""
    meta = (message.get("params") or {}).get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    return token if isinstance(token, (str, int)) and not isinstance(token, bool) else None


async def streamed(send, virtual, caller: Caller, message: dict, owner) -> None:
    """A call of an agent's tool that asked for progress, answered on an event stream: a
    `notifications/progress` for each poll of the agent's task while it works, then the result."""
    token, sent = progress_token(message), 0
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")],
        }
    )

    async def progress(text: str) -> None:
        nonlocal sent
        sent += 1
        params = {"progressToken": token, "progress": sent, "message": text[:1000]}
        event = {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}
        await send({"type": "http.response.body", "body": streams.sse_event(event), "more_body": True})

    answer = await called(virtual, caller, message, owner, progress)
    if caller.stateless and "result" in answer:  # 2026-07-28: complete, and private to the caller
        answer = {**answer, "result": {**STATELESS_RESULT, **answer["result"]}}
    await send({"type": "http.response.body", "body": streams.sse_event(answer)})


def owner_name(owner: tuple[str, object, str]) -> str:
    key, _, skill = owner
    return tool_name(key, skill)


async def _keep_context(caller: Caller, key: str, context) -> None:
    contexts = caller.record.setdefault("agent_contexts", {})
    if isinstance(context, str) and contexts.get(key) != context:
        contexts[key] = context
        await virtual_sessions.keep(caller.virtual_path, caller.session_id, caller.record)


STATUS = {
    "TASK_STATE_SUBMITTED": "working",
    "TASK_STATE_WORKING": "working",
    "TASK_STATE_INPUT_REQUIRED": "input_required",
    "TASK_STATE_AUTH_REQUIRED": "input_required",
    "TASK_STATE_COMPLETED": "completed",
    "TASK_STATE_CANCELED": "cancelled",
    "TASK_STATE_FAILED": "failed",
    "TASK_STATE_REJECTED": "failed",
}
AGENT_MEMBER = "agent:"  # a task's member, when an agent's tool made it
TASK_METHOD_AT_AGENT = {"tasks/get": "GetTask", "tasks/cancel": "CancelTask", "tasks/update": "SendMessage"}


def _status_text(task: dict) -> str:
    """The text of an A2A task's status message ("" when it has none)."""
    status = task.get("status") if isinstance(task.get("status"), dict) else {}
    said, _ = _content((status.get("message") or {}).get("parts"))
    return said[0]["text"][:1000] if said and said[0].get("type") == "text" else ""


def _task_shape(task_id: str, task: dict, agent) -> dict:
    """The MCP task (a `DetailedTask` of SEP-2663) an A2A task is."""
    status = task.get("status") if isinstance(task.get("status"), dict) else {}
    shown = STATUS.get(_state(task), "working")
    stamp = status.get("timestamp") if isinstance(status.get("timestamp"), str) else rfc3339(timezone.now())
    shaped = {
        "taskId": task_id,
        "status": shown,
        "createdAt": stamp,
        "lastUpdatedAt": stamp,
        "ttlMs": None,
        "pollIntervalMs": 1000,
    }
    if said := _status_text(task):
        shaped["statusMessage"] = said
    if shown == "input_required":
        asked = str((status.get("message") or {}).get("messageId") or "input")
        question = shaped.get("statusMessage") or f"{agent.name} asks for more input."
        schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
        shaped["inputRequests"] = {
            f"ask-{asked}": {
                "method": "elicitation/create",
                "params": {"mode": "form", "message": question, "requestedSchema": schema},
            }
        }
    elif shown == "completed":
        shaped["result"] = _result(task, None, agent)
    elif shown == "failed":
        shaped["error"] = {
            "code": jsonrpc.INTERNAL_ERROR,
            "message": shaped.get("statusMessage", f"{agent.name} failed."),
        }
    return shaped


async def task_request(virtual, caller: Caller, message) -> dict:
    """The answer to `tasks/get`, `tasks/update` or `tasks/cancel` of a task an agent's tool made."""
    request_id, method = message["id"], message["method"]
    key = str(message.member).removeprefix(AGENT_MEMBER)
    agent = next((agent for found, agent in virtual.agents if found == key), None)
    if agent is None or not await database_sync_to_async(_usable)(caller.principal, agent):
        return jsonrpc.error_message(request_id, tasks.INVALID_PARAMS, tasks.NOT_FOUND)
    if refused := await _judged(virtual, caller, agent, request_id, TASK_METHOD_AT_AGENT[method]):
        return refused
    upstream_id = message["params"]["taskId"]
    try:
        if method == "tasks/get":
            task = await _asked(caller, agent, _a2a("GetTask", {"id": upstream_id}))
            return _complete(request_id, _task_shape(message.asked_as, task, agent))
        if method == "tasks/cancel":
            await _asked(caller, agent, _a2a("CancelTask", {"id": upstream_id}))
            return _complete(request_id, {})
        answer = _answer_of(message["params"].get("inputResponses"))
        if answer is not None:
            context = caller.record.get("agent_contexts", {}).get(key)
            sent = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": answer}]}
            sent |= {"taskId": upstream_id, **({"contextId": context} if isinstance(context, str) else {})}
            await _asked(
                caller,
                agent,
                _a2a("SendMessage", {"message": sent}),
            )
        return _complete(request_id, {})
    except _AgentFailed as failed:
        return jsonrpc.error_message(request_id, jsonrpc.INTERNAL_ERROR, str(failed))
    except CredentialMissing as missing:
        return jsonrpc.error_message(request_id, jsonrpc.FORBIDDEN, str(missing))


def _a2a(method: str, params: dict) -> dict:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


def _complete(request_id, result: dict) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "result": {"resultType": "complete", **result}}


def _answer_of(responses) -> str | None:
    """The text a client's `inputResponses` answer the agent's question with (the first accepted)."""
    for response in (responses or {}).values() if isinstance(responses, dict) else []:
        content = response.get("content") if isinstance(response, dict) else None
        if isinstance(response, dict) and response.get("action") == "accept" and isinstance(content, dict):
            answer = content.get("answer", next((v for v in content.values() if isinstance(v, str)), None))
            if isinstance(answer, str) and answer:
                return answer[:MESSAGE_MAX_LENGTH]
    return None


async def _judged(virtual, caller: Caller, agent, request_id, method: str = "SendMessage") -> dict | None:
    rules = await quotas.rules(caller.epochs.limits)
    target = Target(TargetKind.AGENT, agent.path, tuple(agent.tags or ()))
    virtual_target = Target(TargetKind.VIRTUAL_SERVER, virtual.path)
    call = jsonrpc.Message(raw={"method": method}, kind="request", method=method)
    try:
        judged = await decision.member_judged(rules, caller.principal, virtual_target, target, call)
    except Refusal as quarantined:
        return jsonrpc.error_message(request_id, jsonrpc.FORBIDDEN, quarantined.detail)
    if judged.denied:
        return jsonrpc.error_message(request_id, jsonrpc.FORBIDDEN, next(iter(judged.denied.values())))
    if not judged.limits.allowed:
        _, code, text, data, _ = quotas.refusal(judged.limits)
        return quotas.limit_error(request_id, code, text, data)
    return None


async def _asked(caller: Caller, agent, request: dict) -> dict:
    """The A2A result of one JSON-RPC request to the agent (its `result`, in v1.0's shape), through the
    exchange stage; to an agent that speaks only v0.3, the request and its answer are translated."""
    legacy = _speaks_only_v03(agent)
    sent = _as_v03(request) if legacy else request
    url = calls.from_jsonrpc(sent).upstream_url(agent)
    body = json.dumps(sent).encode()

    async def attempt(credential: dict[str, str], _send) -> dict:
        headers = {**credential, "content-type": "application/json"}
        if not legacy:
            headers["a2a-version"] = "1.0"
        try:
            async with upstream.session().post(
                url, data=body, headers=headers, timeout=upstream.timeout()
            ) as response:
                if refused := sign_in_refused(agent, response):
                    raise refused
                raw = await upstream.read_bounded(response, settings.GATEWAY_MAX_REWRITE_BYTES)
        except upstream.ERRORS as error:
            raise _AgentFailed(
                f"The agent at {agent.path} could not be reached ({type(error).__name__})."
            ) from None
        try:
            answer = json.loads(raw or b"")
        except ValueError:
            raise _AgentFailed(f"The agent at {agent.path} answered something that is not JSON.") from None
        if isinstance(answer, dict) and isinstance(answer.get("error"), dict):
            said = str(answer["error"].get("message", ""))[:300]
            raise _AgentFailed(f"The agent at {agent.path} refused: {said}")
        result = answer.get("result") if isinstance(answer, dict) else None
        if not isinstance(result, dict):
            raise _AgentFailed(f"The agent at {agent.path} answered without a result.")
        return _from_v03(result, request["method"]) if legacy else result

    async def over_share(full: Refusal) -> dict:
        raise _AgentFailed(full.detail)

    try:
        return await exchange.carried(agent, caller.principal, caller.epoch, url, attempt, over_share)
    except CredentialUnavailable as unavailable:
        raise _AgentFailed(str(unavailable)) from None


V03_METHODS = {"SendMessage": "message/send", "GetTask": "tasks/get", "CancelTask": "tasks/cancel"}


def _speaks_only_v03(agent) -> bool:
    """Whether the agent's card names no v1.0 JSON-RPC interface, only v0.3 ones."""
    versions = {
        str(interface.get("protocol_version") or interface.get("protocolVersion") or "")
        for interface in a2a_interfaces(agent)
        if (interface.get("protocol_binding") or interface.get("protocolBinding")) == "JSONRPC"
    }
    versions.discard("")
    versions = versions or {str(agent.protocol_version or "")}
    return all(version.startswith("0.") for version in versions)


def _as_v03(request: dict) -> dict:
    """A v1.0 request as v0.3 says it: its method's old name; a message's kind, lower-case role and kinds
    on its parts."""
    params = dict(request["params"])
    if isinstance(params.get("message"), dict):
        message = dict(params["message"])
        parts = [
            {"kind": "data", "data": part["data"]}
            if "data" in part
            else {"kind": "text", "text": part.get("text", "")}
            for part in message.get("parts") or []
        ]
        message |= {"kind": "message", "role": "user", "parts": parts}
        params["message"] = message
    return {**request, "method": V03_METHODS[request["method"]], "params": params}


def _from_v03(result: dict, method: str) -> dict:
    """A v0.3 answer in v1.0's shape: a task or a message under its name for `SendMessage` (a task alone
    for the others), states as TASK_STATE_*, parts without their kinds."""
    if result.get("kind") == "message":
        return {"message": _message_v1(result)}
    status = result.get("status") if isinstance(result.get("status"), dict) else {}
    state = "TASK_STATE_" + str(status.get("state", "unknown")).upper().replace("-", "_")
    task = {
        **result,
        "status": {**status, "state": state, "message": _message_v1(status.get("message"))},
        "artifacts": [
            {**artifact, "parts": _parts_v1(artifact.get("parts"))}
            for artifact in result.get("artifacts") or []
            if isinstance(artifact, dict)
        ],
    }
    return {"task": task} if method == "SendMessage" else task


def _message_v1(message) -> dict | None:
    if not isinstance(message, dict):
        return None
    return {**message, "parts": _parts_v1(message.get("parts"))}


def _parts_v1(parts) -> list[dict]:
    shown = []
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("kind") == "file" and isinstance(part.get("file"), dict):
            file = part["file"]
            shown.append(
                {"raw": file.get("bytes"), "url": file.get("uri"), "mediaType": file.get("mimeType")}
            )
        elif part.get("kind") == "data":
            shown.append({"data": part.get("data")})
        else:
            shown.append({"text": part.get("text")})
    return shown


def _state(task: dict) -> str:
    status = task.get("status") if isinstance(task.get("status"), dict) else {}
    return str(status.get("state", ""))


def _result(task: dict | None, message: dict | None, agent) -> dict:
    """The MCP tool result of an agent's answer: its artifacts' (or message's) parts as content."""
    if task is None:  # the agent answered with a message
        content, structured = _content((message or {}).get("parts"))
        return _tool_result(content, structured, False)
    parts = [
        part
        for artifact in task.get("artifacts") or []
        if isinstance(artifact, dict)
        for part in artifact.get("parts") or []
    ]
    state = _state(task)
    status_message = (
        (task.get("status") or {}).get("message") if isinstance(task.get("status"), dict) else None
    )
    said, _ = _content((status_message or {}).get("parts"))
    if state in ASKING:
        return _tool_result(
            said or [{"type": "text", "text": f"{agent.name} asks for more input."}], None, False
        )
    if state not in TERMINAL:
        text = f"{agent.name} is still working on it (task {task.get('id')}); ask again later."
        return _tool_result([{"type": "text", "text": text}], None, True)
    content, structured = _content(parts)
    if state == "TASK_STATE_COMPLETED":
        return _tool_result(content or said, structured, False)
    words = {
        "TASK_STATE_FAILED": "failed",
        "TASK_STATE_REJECTED": "refused the task",
        "TASK_STATE_CANCELED": "cancelled the task",
    }
    return _tool_result(said or [{"type": "text", "text": f"{agent.name} {words[state]}."}], structured, True)


def _content(parts) -> tuple[list[dict], dict | None]:
    content, structured = [], {}
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("text"), str):
            content.append({"type": "text", "text": part["text"]})
        elif isinstance(part.get("data"), dict):
            structured.update(part["data"])
            content.append({"type": "text", "text": json.dumps(part["data"], ensure_ascii=False)})
        elif isinstance(part.get("raw"), str) or isinstance(part.get("url"), str):
            resource = {"uri": part.get("url") or f"data:{part.get('mediaType', 'application/octet-stream')}"}
            if isinstance(part.get("mediaType"), str):
                resource["mimeType"] = part["mediaType"]
            if isinstance(part.get("raw"), str):
                resource["blob"] = part["raw"]
            content.append({"type": "resource", "resource": resource})
    return content, (structured or None)


def _tool_result(content: list[dict], structured: dict | None, is_error: bool) -> dict:
    result = {"content": content, "isError": is_error}
    if structured is not None:
        result["structuredContent"] = structured
    return result
