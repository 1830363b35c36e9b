"""What an A2A agent's answers are to an MCP client (gateway/virtual/agent_tools.py): a task's or a
message's parts as a tool result (text parts as text, data parts as structured content, files as
embedded resources), and an unfinished A2A task as an MCP task (a `DetailedTask` of SEP-2663), its state
mapped: `SUBMITTED`/`WORKING` → `working`, `INPUT_REQUIRED`/`AUTH_REQUIRED` → `input_required` with the
agent's question as an elicitation, `COMPLETED` → `completed`, `CANCELED` → `cancelled`,
`FAILED`/`REJECTED` → `failed`. Tasks are read in v1.0's shape (gateway/virtual/agent_calls.py turns v0.3
answers into it)."""

from __future__ import annotations

import json

from django.utils import timezone

from core.timestamps import rfc3339
from gateway import jsonrpc

TERMINAL = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}
ASKING = {"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"}
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


def state(task: dict) -> str:
    status = task.get("status") if isinstance(task.get("status"), dict) else {}
    return str(status.get("state", ""))


def status_text(task: dict) -> str:
    """The text of an A2A task's status message ("" when it has none)."""
    status = task.get("status") if isinstance(task.get("status"), dict) else {}
    said, _ = _content((status.get("message") or {}).get("parts"))
    return said[0]["text"][:1000] if said and said[0].get("type") == "text" else ""


def task_shape(task_id: str, task: dict, agent) -> dict:
    """The MCP task an A2A task is."""
    status = task.get("status") if isinstance(task.get("status"), dict) else {}
    shown = STATUS.get(state(task), "working")
    stamp = status.get("timestamp") if isinstance(status.get("timestamp"), str) else rfc3339(timezone.now())
    shaped = {
        "taskId": task_id,
        "status": shown,
        "createdAt": stamp,
        "lastUpdatedAt": stamp,
        "ttlMs": None,
        "pollIntervalMs": 1000,
    }
    if said := status_text(task):
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
        shaped["result"] = result(task, None, agent)
    elif shown == "failed":
        shaped["error"] = {
            "code": jsonrpc.INTERNAL_ERROR,
            "message": shaped.get("statusMessage", f"{agent.name} failed."),
        }
    return shaped


def result(task: dict | None, message: dict | None, agent) -> dict:
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
    now = state(task)
    status_message = (
        (task.get("status") or {}).get("message") if isinstance(task.get("status"), dict) else None
    )
    said, _ = _content((status_message or {}).get("parts"))
    if now in ASKING:
        return _tool_result(
            said or [{"type": "text", "text": f"{agent.name} asks for more input."}], None, False
        )
    if now not in TERMINAL:
        text = f"{agent.name} is still working on it (task {task.get('id')}); ask again later."
        return _tool_result([{"type": "text", "text": text}], None, True)
    content, structured = _content(parts)
    if now == "TASK_STATE_COMPLETED":
        return _tool_result(content or said, structured, False)
    words = {
        "TASK_STATE_FAILED": "failed",
        "TASK_STATE_REJECTED": "refused the task",
        "TASK_STATE_CANCELED": "cancelled the task",
    }
    return _tool_result(said or [{"type": "text", "text": f"{agent.name} {words[now]}."}], structured, True)


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
    answer = {"content": content, "isError": is_error}
    if structured is not None:
        answer["structuredContent"] = structured
    return answer
