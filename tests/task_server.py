"""An MCP server of the 2026-07-28 revision with the tasks extension (`io.modelcontextprotocol/tasks`,
SEP-2663), written to the extension's specification (modelcontextprotocol/ext-tasks,
specification/2026-07-28/tasks.md): the installed `mcp` SDK carries the extension machinery but no task
runtime. Stateless JSON-RPC over HTTP, each request answered as JSON.

- `server/discover` (and `initialize`, for a gateway that opens a session of an earlier revision) declares
  the extension; `tools/list` has `long_report` and `hello_world`.
- `tools/call` of either, from a request that declares the extension in its per-request capabilities,
  answers `resultType: "task"`; without it, -32021 (missing required client capability).
- `long_report`'s task is `working` for `polls` polls of `tasks/get`, then `completed` with its report.
- `hello_world`'s task is `input_required` with an elicitation (`inputRequests`, key `name`) until a
  `tasks/update` answers it, then `completed` with "Hello, <name>!" (the specification's own example).
- `tasks/cancel` makes a task `cancelled`; an unknown task id is -32602 "Failed to retrieve task: Task
  not found".
- `subscriptions/listen` with `notifications.taskIds` (from a request that declares the extension, else
  -32021) answers on an event stream: `notifications/subscriptions/acknowledged` naming the ids it
  knows, then one `notifications/tasks` with each of those tasks as `tasks/get` shows it, then the end.

With `sse`, answers come as one event on a stream, as SDK servers send them.

Every request is noted in `seen` (method, its taskId, its Mcp-Name header, its Authorization header), so
a test can tell what reached the server and how it was named."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

from tests.mcp_servers import UvicornThread, asgi_body, loopback_socket

EXTENSION = "io.modelcontextprotocol/tasks"
VERSION = "2026-07-28"
TOOLS = [
    {"name": "long_report", "description": "Writes a long report.", "inputSchema": {"type": "object"}},
    {"name": "hello_world", "description": "Greets you by name.", "inputSchema": {"type": "object"}},
]
ELICIT_NAME = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Please enter your name.",
        "requestedSchema": {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        },
    },
}


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class TaskServer:
    def __init__(self, polls: int = 2, sse: bool = False):
        self.polls, self.sse = polls, sse
        self.tasks: dict[str, dict] = {}
        self.seen: list[tuple[str, str | None, str | None, str | None]] = []
        self.cancelled: list[str] = []
        self.listened: list[list[str]] = []  # the task ids each subscriptions/listen asked for

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return
        headers = {key.decode().lower(): value.decode() for key, value in scope["headers"]}
        message = json.loads(await asgi_body(receive) or b"{}")
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        method = message.get("method")
        self.seen.append(
            (method, params.get("taskId"), headers.get("mcp-name"), headers.get("authorization"))
        )
        if "id" not in message:
            return await self._send(send, 202, None)
        if method == "subscriptions/listen" and _declares(params):
            return await self._listened(send, message["id"], params)
        answer = self._answer(method, params)
        body = {"jsonrpc": "2.0", "id": message["id"], **answer}
        return await self._send(send, 200, body)

    async def _send(self, send, status: int, body) -> None:
        raw = b"" if body is None else json.dumps(body).encode()
        content_type = b"application/json"
        if self.sse and body is not None:  # as SDK servers answer: one event on a stream
            raw, content_type = b"event: message\ndata: " + raw + b"\n\n", b"text/event-stream"
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", content_type),
                    (b"content-length", str(len(raw)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": raw})

    async def _listened(self, send, request_id, params: dict) -> None:
        asked = (params.get("notifications") or {}).get("taskIds") or []
        self.listened.append(list(asked))
        known = [task_id for task_id in asked if task_id in self.tasks]
        acknowledged = {"notifications": {"taskIds": known}}
        events = [{"method": "notifications/subscriptions/acknowledged", "params": acknowledged}]
        events += [{"method": "notifications/tasks", "params": self._polled(self.tasks[t])} for t in known]
        raw = b"".join(
            b"event: message\ndata: " + json.dumps({"jsonrpc": "2.0", **event}).encode() + b"\n\n"
            for event in events
        )
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": raw})

    def _answer(self, method: str, params: dict) -> dict:
        if method == "server/discover":
            return _complete(
                {
                    "supportedVersions": [VERSION],
                    "capabilities": {"tools": {}, "extensions": {EXTENSION: {}}},
                    "serverInfo": {"name": "Tasks", "version": "1.0.0"},
                }
            )
        if method == "initialize":  # for a gateway that opens a session of an earlier revision first
            version = params.get("protocolVersion", VERSION)
            capabilities = {"tools": {}, "extensions": {EXTENSION: {}}}
            return {
                "result": {
                    "protocolVersion": version,
                    "capabilities": capabilities,
                    "serverInfo": {"name": "Tasks", "version": "1.0.0"},
                }
            }
        if method == "tools/list":
            return _complete({"tools": TOOLS})
        if method in ("tools/call", "subscriptions/listen") and not _declares(params):
            return {
                "error": {
                    "code": -32021,
                    "message": "Missing required client capability",
                    "data": {"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
                }
            }
        if method == "tools/call":
            task_id = str(uuid.uuid4())
            status = "input_required" if params.get("name") == "hello_world" else "working"
            task = {"taskId": task_id, "status": status, "createdAt": _now(), "lastUpdatedAt": _now()}
            task |= {"ttlMs": 3600000, "pollIntervalMs": 100}
            self.tasks[task_id] = {"task": task, "tool": params.get("name"), "polls": 0}
            shown = {key: value for key, value in task.items()}
            return {"result": {"resultType": "task", **shown}}
        kept = self.tasks.get(params.get("taskId"))
        if method in ("tasks/get", "tasks/update", "tasks/cancel") and kept is None:
            return {"error": {"code": -32602, "message": "Failed to retrieve task: Task not found"}}
        if method == "tasks/get":
            return _complete(self._polled(kept))
        if method == "tasks/update":
            name = (((params.get("inputResponses") or {}).get("name") or {}).get("content") or {}).get("name")
            if kept["task"]["status"] == "input_required" and isinstance(name, str):
                kept["task"] |= {"status": "completed", "lastUpdatedAt": _now()}
                kept["result"] = {"content": [{"type": "text", "text": f"Hello, {name}!"}], "isError": False}
            return _complete({})
        if method == "tasks/cancel":
            self.cancelled.append(params["taskId"])
            kept["task"] |= {"status": "cancelled", "lastUpdatedAt": _now()}
            return _complete({})
        return {"error": {"code": -32601, "message": f"Method not found: {method}"}}

    def _polled(self, kept: dict) -> dict:
        task = kept["task"]
        if task["status"] == "working":
            kept["polls"] += 1
            if kept["polls"] > self.polls:
                task |= {"status": "completed", "lastUpdatedAt": _now()}
                kept["result"] = {"content": [{"type": "text", "text": "The report."}], "isError": False}
        shown = dict(task)
        if task["status"] == "completed":
            shown["result"] = kept["result"]
        if task["status"] == "input_required":
            shown["inputRequests"] = {"name": ELICIT_NAME}
        return shown


def _declares(params: dict) -> bool:
    meta = params.get("_meta") or {}
    return EXTENSION in (
        (meta.get("io.modelcontextprotocol/clientCapabilities") or {}).get("extensions") or {}
    )


def _complete(result: dict) -> dict:
    return {"result": {"resultType": "complete", **result}}


def task_server(polls: int = 2, sse: bool = False) -> tuple[UvicornThread, TaskServer]:
    app = TaskServer(polls, sse)
    return UvicornThread(app, loopback_socket()).start(), app
