"""The messages and tasks of a virtual server's A2A face (gateway/virtual/a2a.py): a message naming a
skill is a call of that tool (gateway/virtual/answers.tool_called, judged as any call through the virtual
server), its answer a task in the call's binding and version.

- `SendMessage` (v0.3 `message/send`) answers the completed (or failed) task; a tool still running after
  VIRTUAL_A2A_ANSWER_SECONDS is answered with a `WORKING` task, finished in the background and kept in
  Redis, so `GetTask` reads it from any web process.
- `SendStreamingMessage` (v0.3 `message/stream`) answers on an event stream: the task first (its only
  event when the tool answered at once), then, once the tool ends, its artifact (`artifactUpdate`) and its
  final status (`statusUpdate`; v0.3's `artifact-update` and `status-update` with `final`).
- `SubscribeToTask` (v0.3 `tasks/resubscribe`) follows a task still running the same way, the task as it
  is now first; a task that has ended is "unsupported" (there is nothing more to follow).
- `CancelTask` stops the call (the member is told: gateway/virtual/members.ask) and the task is
  `CANCELED`; an ended task cannot be cancelled.

A task belongs to the caller that sent its message: for anyone else it is "task not found"."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime

from django.conf import settings

from gateway import forwarding, front, jsonrpc, sessions
from gateway.a2a import calls
from gateway.virtual import answers

INVALID_PARAMS = -32602
UNSUPPORTED = -32004  # A2A's UnsupportedOperationError
TASK_NOT_FOUND = -32001  # A2A's TaskNotFoundError
TASK_NOT_CANCELABLE = -32002  # A2A's TaskNotCancelableError
SENDS = ("SendMessage", "message/send")
STREAMS = ("SendStreamingMessage", "message/stream")
TASK_READS = ("GetTask", "CancelTask", "tasks/get", "tasks/cancel")
SUBSCRIBES = ("SubscribeToTask", "tasks/resubscribe")
POLL_SECONDS = 0.5
STATES = {  # (v1.0, v0.3) of each state the face shows
    "working": ("TASK_STATE_WORKING", "working"),
    "completed": ("TASK_STATE_COMPLETED", "completed"),
    "failed": ("TASK_STATE_FAILED", "failed"),
    "canceled": ("TASK_STATE_CANCELED", "canceled"),
}
TERMINAL = ("completed", "failed", "canceled")
_RUNNING: dict[
    tuple[str, str], asyncio.Task
] = {}  # (virtual path, task id): slow tools' tasks, until they end


async def handled(receive, send, virtual, principal, epochs, call: calls.Call) -> None:
    """Answers one A2A operation of the face, in the call's binding and version."""
    if call.method in TASK_READS:
        return await forwarding.json_answer(send, *await _task_asked(virtual, principal, call))
    if call.method in SUBSCRIBES:
        return await _subscribed(receive, send, virtual, principal, call)
    if call.method in SENDS + STREAMS:
        return await _sent(receive, send, virtual, principal, epochs, call)
    text = f"{call.method} is not served here: a virtual server takes messages and follows their tasks."
    return await forwarding.json_answer(send, *call.refused(UNSUPPORTED, text))


def _answered(call: calls.Call, result: dict) -> tuple[int, dict]:
    """(200, the binding's answer carrying `result`)."""
    if call.rest:
        return 200, result
    return 200, {"jsonrpc": "2.0", "id": call.request_id, "result": result}


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


async def _sent(receive, send, virtual, principal, epochs, call: calls.Call) -> None:
    message = call.params.get("message")
    request_id = call.request_id if call.request_id is not None else 1
    asked = _asked(message)
    if asked is None:
        problem = (
            'Name a skill: a data part {"skill": "<tool>", "arguments": {...}}, or a text starting with it.'
        )
        return await forwarding.json_answer(send, *call.refused(INVALID_PARAMS, problem))
    skill, arguments = asked
    if not isinstance(arguments, dict):
        return await forwarding.json_answer(
            send, *call.refused(INVALID_PARAMS, "arguments must be an object.")
        )
    context = message.get("contextId") if isinstance(message.get("contextId"), str) else str(uuid.uuid4())
    running = asyncio.create_task(
        answers.tool_called(virtual, principal, epochs, skill, arguments, request_id)
    )
    done, _ = await asyncio.wait({running}, timeout=settings.VIRTUAL_A2A_ANSWER_SECONDS)
    streaming = call.method in STREAMS
    if running not in done:  # a slow tool: a working task, finished in the background
        task_id, owner = str(uuid.uuid4()), sessions.owner(principal)
        working = _task(call.legacy, task_id, context, skill, message, None)
        kept = {"owner": owner, "legacy": call.legacy, "skill": skill, "task": working}
        await sessions.keep(sessions.Kind.VIRTUAL_A2A_TASK, virtual.path, task_id, kept)
        finishing = asyncio.create_task(_finished(virtual.path, task_id, kept, running, skill, message))
        _RUNNING[(virtual.path, task_id)] = finishing
        finishing.add_done_callback(lambda _: _RUNNING.pop((virtual.path, task_id), None))
        if streaming:
            return await _followed(receive, send, call, virtual.path, working)
        return await forwarding.json_answer(send, *_answered(call, _first(call, working)))
    reply = running.result()
    if "error" in reply:
        code = reply["error"]["code"]
        refused = call.refused(
            calls.ACCESS_DENIED if code == jsonrpc.FORBIDDEN else code, reply["error"]["message"]
        )
        return await forwarding.json_answer(send, *refused)
    task = _task(call.legacy, str(uuid.uuid4()), context, skill, message, reply)
    if streaming:
        await _stream_start(send)
        return await _stream_end(send, [_first(call, task)], call)
    return await forwarding.json_answer(send, *_answered(call, _first(call, task)))


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


def _shown(task: dict) -> str:
    """The state a task of the face is in (a key of STATES)."""
    return next(name for name, (new, old) in STATES.items() if task["status"]["state"] in (new, old))


async def _task_asked(virtual, principal, call: calls.Call) -> tuple[int, dict]:
    """`GetTask` or `CancelTask` (v0.3 `tasks/get`, `tasks/cancel`) of a slow tool's task."""
    kept = await _own_task(virtual, principal, call)
    if kept is None:
        return call.refused(TASK_NOT_FOUND, "Task not found.")
    task = kept["task"]
    if call.method in ("CancelTask", "tasks/cancel"):
        if (shown := _shown(task)) in TERMINAL:
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


async def _own_task(virtual, principal, call: calls.Call) -> dict | None:
    """The kept record of the task a call names, when it is the caller's own."""
    task_id = call.path_task if call.rest else call.params.get("id")
    if not isinstance(task_id, str) or not task_id:
        return None
    kept = await sessions.record(sessions.Kind.VIRTUAL_A2A_TASK, virtual.path, task_id)
    return kept if kept is not None and kept.get("owner") == sessions.owner(principal) else None


async def _subscribed(receive, send, virtual, principal, call: calls.Call) -> None:
    kept = await _own_task(virtual, principal, call)
    if kept is None:
        return await forwarding.json_answer(send, *call.refused(TASK_NOT_FOUND, "Task not found."))
    if (shown := _shown(kept["task"])) in TERMINAL:
        text = f"The task is {shown}: there is nothing more to follow."
        return await forwarding.json_answer(send, *call.refused(UNSUPPORTED, text))
    return await _followed(receive, send, call, virtual.path, kept["task"])


async def _followed(receive, send, call: calls.Call, path: str, task: dict) -> None:
    """An event stream following a task that has not ended: the task as it is now, then its end (or
    until the client leaves: the task goes on)."""
    await _stream_start(send)
    await send({"type": "http.response.body", "body": _event(call, _first(call, task)), "more_body": True})
    ending = asyncio.create_task(_ended(path, task["id"]))
    watch = asyncio.create_task(front.disconnected(receive))
    await asyncio.wait({ending, watch}, return_when=asyncio.FIRST_COMPLETED)
    for waiting in (ending, watch):
        waiting.cancel()
    await asyncio.gather(ending, watch, return_exceptions=True)
    if watch.done() and not watch.cancelled():
        return  # the client has gone: nothing more goes to it
    final = ending.result() if ending.done() and not ending.cancelled() else None
    await _stream_end(send, _last(call, final) if final else [], call)


async def _ended(path: str, task_id: str) -> dict | None:
    """The task once it has ended (None when it is forgotten): waited for where it runs, else read
    again every POLL_SECONDS from Redis."""
    while True:
        local = _RUNNING.get((path, task_id))
        if local is not None:
            await asyncio.wait({local}, timeout=POLL_SECONDS)
        else:
            await asyncio.sleep(POLL_SECONDS)
        kept = await sessions.record(sessions.Kind.VIRTUAL_A2A_TASK, path, task_id)
        if kept is None:
            return None
        if _shown(kept["task"]) in TERMINAL:
            return kept["task"]


def _first(call: calls.Call, task: dict) -> dict:
    """A stream's (or an answer's) first payload: the task (v1.0 names it)."""
    return task if call.legacy else {"task": task}


def _last(call: calls.Call, task: dict) -> list[dict]:
    """The payloads that end a followed task: its artifacts, then its final status."""
    ids = {"taskId": task["id"], "contextId": task["contextId"]}
    payloads = []
    for artifact in task.get("artifacts") or []:
        update = {**ids, "artifact": artifact, "lastChunk": True}
        payloads.append({"kind": "artifact-update", **update} if call.legacy else {"artifactUpdate": update})
    status = {**ids, "status": task["status"]}
    payloads.append(
        {"kind": "status-update", **status, "final": True} if call.legacy else {"statusUpdate": status}
    )
    return payloads


async def _stream_start(send) -> None:
    headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})


async def _stream_end(send, payloads: list[dict], call: calls.Call) -> None:
    body = b"".join(_event(call, payload) for payload in payloads)
    await send({"type": "http.response.body", "body": body})


def _event(call: calls.Call, payload: dict) -> bytes:
    """One event of the stream: the payload as the binding carries it."""
    carried = payload if call.rest else {"jsonrpc": "2.0", "id": call.request_id, "result": payload}
    return b"data: " + json.dumps(carried, separators=(",", ":")).encode() + b"\n\n"
