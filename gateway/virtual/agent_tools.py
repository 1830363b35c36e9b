"""A2A agents as MCP tools on a virtual server (its definition's `agents`): each skill of an agent's card is
a tool, `<key>__<skill id>`, described by the skill, taking `{message: string, data?: object}` (the skill's
examples shown as the message's examples). A call is an A2A `SendMessage` to the agent
(gateway/virtual/agent_calls.py) through the pipeline's stages: the one judge at the agent (its
quarantine, the caller's rule for `SendMessage` on the agent's path, the limits of the agent and of the
virtual server in one count), the one credential resolver and the fair share (gateway/exchange.py).
Rights are the agent's: a caller who may not message it, or cannot see it, does not see its tools, and
calling one is "Unknown tool".

The conversation continues across calls: the `contextId` the agent answers is kept per MCP session and
agent, and sent with the next message. The answer becomes the tool's result
(gateway/virtual/agent_results.py); a task that fails, is rejected or cancelled is a result with
`isError`.

A task the agent has not finished when it answers becomes an MCP task (gateway/tasks.py) when the call
declared the tasks extension (`tasks/get` is `GetTask`, `tasks/update` sends the answer to the agent's
question into its task, `tasks/cancel` is `CancelTask`). Without the extension the call waits for the
task's end, for at most AGENT_TOOL_WAIT_SECONDS: a call that asked for progress is answered on an event
stream, a progress notification for each status update of the agent's own stream (`SendStreamingMessage`,
when its card says it streams) or else for each poll (`GetTask`); a task that asks for input gives its
question as the result (the next call, in the same context, answers it)."""

from __future__ import annotations

import asyncio
import re
import time
import uuid

from channels.db import database_sync_to_async
from django.conf import settings

from agents.policies import agent_usable, agents_usable
from core.targets import Target, TargetKind
from gateway import decision, jsonrpc, quotas, sessions, streams, tasks
from gateway.deferred import STATELESS_RESULT
from gateway.routing import Refusal
from gateway.virtual import agent_calls, agent_results
from gateway.virtual import sessions as virtual_sessions
from gateway.virtual.agent_results import ASKING, TERMINAL
from gateway.virtual.members import Caller
from servers.upstream_auth import CredentialMissing

SEPARATOR = "__"
MESSAGE_MAX_LENGTH = 100_000
INVALID_PARAMS = -32602
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
    """The JSON-RPC answer to a `tools/call` of an agent's tool; `progress(text)`, when given, is told each
    status of a task the agent is still working on (the caller asked for progress: `streamed`)."""
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
    request = agent_calls.a2a("SendMessage", {"message": sent, "metadata": {"skill": skill}})
    deadline = time.monotonic() + settings.AGENT_TOOL_WAIT_SECONDS

    async def heard(task: dict) -> None:
        if progress is not None:
            shown = agent_results.STATUS.get(agent_results.state(task), "working")
            await progress(agent_results.status_text(task) or f"{agent.name}: {shown}")

    try:
        if progress is not None and agent_calls.streams_answers(agent) and not tasks.declares(message):
            answered = await agent_calls.followed(caller, agent, request, heard, deadline)
        else:
            answered = await agent_calls.asked(caller, agent, request)
        task = answered.get("task")
        if isinstance(task, dict) and agent_results.state(task) not in TERMINAL and tasks.declares(message):
            await _keep_context(caller, key, task.get("contextId"))
            handle = tasks.Handle(
                sessions.owner(principal),
                virtual.path,
                AGENT_MEMBER + key,
                str(task.get("id")),
                owner_name(owner),
            )
            result = {"resultType": "task", **agent_results.task_shape(tasks.mint(handle), task, agent)}
            return {"jsonrpc": "2.0", "id": request_id, "result": result}
        while (
            isinstance(task, dict)
            and agent_results.state(task) not in TERMINAL | ASKING
            and time.monotonic() < deadline
        ):
            await asyncio.sleep(POLL_SECONDS)
            task = await agent_calls.asked(caller, agent, agent_calls.a2a("GetTask", {"id": task.get("id")}))
            await heard(task)
    except agent_calls.AgentFailed as failed:
        return jsonrpc.error_message(request_id, jsonrpc.INTERNAL_ERROR, str(failed))
    except CredentialMissing as missing:
        return jsonrpc.error_message(request_id, jsonrpc.FORBIDDEN, str(missing))
    await _keep_context(caller, key, (task or answered.get("message") or {}).get("contextId"))
    result = agent_results.result(task, answered.get("message"), agent)
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def progress_token(message: dict):
    """The progress token a `tools/call` asked for (`params._meta.progressToken`), or None."""
    meta = (message.get("params") or {}).get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    return token if isinstance(token, (str, int)) and not isinstance(token, bool) else None


async def streamed(send, virtual, caller: Caller, message: dict, owner) -> None:
    """A call of an agent's tool that asked for progress, answered on an event stream: a
    `notifications/progress` for each status of the agent's task while it works, then the result."""
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


AGENT_MEMBER = "agent:"  # a task's member, when an agent's tool made it
TASK_METHOD_AT_AGENT = {"tasks/get": "GetTask", "tasks/cancel": "CancelTask", "tasks/update": "SendMessage"}


async def task_request(virtual, caller: Caller, message) -> dict:
    """The answer to `tasks/get`, `tasks/update` or `tasks/cancel` of a task an agent's tool made."""
    request_id, method = message["id"], message["method"]
    if not tasks.declares(message):
        return tasks.missing_capability(request_id)
    key = str(message.member).removeprefix(AGENT_MEMBER)
    agent = next((agent for found, agent in virtual.agents if found == key), None)
    if agent is None or not await database_sync_to_async(_usable)(caller.principal, agent):
        return jsonrpc.error_message(request_id, tasks.INVALID_PARAMS, tasks.NOT_FOUND)
    if refused := await _judged(virtual, caller, agent, request_id, TASK_METHOD_AT_AGENT[method]):
        return refused
    upstream_id = message["params"]["taskId"]
    try:
        if method == "tasks/get":
            task = await agent_calls.asked(caller, agent, agent_calls.a2a("GetTask", {"id": upstream_id}))
            return _complete(request_id, agent_results.task_shape(message.asked_as, task, agent))
        if method == "tasks/cancel":
            await agent_calls.asked(caller, agent, agent_calls.a2a("CancelTask", {"id": upstream_id}))
            return _complete(request_id, {})
        answer = _answer_of(message["params"].get("inputResponses"))
        if answer is not None:
            context = caller.record.get("agent_contexts", {}).get(key)
            sent = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": answer}]}
            sent |= {"taskId": upstream_id, **({"contextId": context} if isinstance(context, str) else {})}
            await agent_calls.asked(caller, agent, agent_calls.a2a("SendMessage", {"message": sent}))
        return _complete(request_id, {})
    except agent_calls.AgentFailed as failed:
        return jsonrpc.error_message(request_id, jsonrpc.INTERNAL_ERROR, str(failed))
    except CredentialMissing as missing:
        return jsonrpc.error_message(request_id, jsonrpc.FORBIDDEN, str(missing))


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
