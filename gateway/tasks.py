"""MCP tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663) through the gateway, bound to their
caller. A server may answer a `tools/call` that declared the extension with a task (`resultType: "task"`)
the client then polls (`tasks/get`), feeds (`tasks/update`) and cancels (`tasks/cancel`).

- The task id a client sees is the gateway's own: the server's id sealed (core/sealing.py, AES-GCM under
  the registry's keys) with whose it is (the caller), where (the server or virtual server, and its member)
  and which tool it runs. It is high-entropy, unforgeable, and read by any web process on any host with
  nothing stored, so a task is the same wherever its poll lands.
- A task request is resolved before anything judges it (`resolved`, from gateway/app.py): a task id that
  does not open, or is another caller's or another target's, is "task not found" (-32602, as the
  extension has it), the same words whether the task exists or not. Otherwise the request carries the
  server's own id onward, and the tool it runs for the one judge: the caller must still be allowed to
  call that tool there (blocks and pins included; quarantines and fair shares apply as to any request;
  polls count against no call limit).
- The answers are renamed on their way back (`TaskNames`, as forwarding renames a virtual member's
  messages): a task a call created gets its gateway id, and a task request's answer the id it was asked
  by. The `Mcp-Name` header of a task request names the server's id (`outbound_headers`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from core import sealing
from gateway import jsonrpc

EXTENSION = "io.modelcontextprotocol/tasks"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
PREFIX = "registry-task."
CONTEXT = "gateway-task"
NOT_FOUND = "Failed to retrieve task: Task not found"
INVALID_PARAMS = -32602
MISSING_CAPABILITY = -32021
LISTEN = "subscriptions/listen"
NOTIFIED = "notifications/tasks"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"


@dataclass(frozen=True)
class Handle:
    owner: str  # sessions.owner of the caller who created it
    target: str  # the server or virtual server path it was created at
    member: str  # a virtual server's member key ("" for a server)
    upstream: str  # the server's own task id
    tool: str  # the tool's own name at that server


class ResolvedTask(dict):
    """A task request as the gateway resolved it: its `params.taskId` is the server's, and `tool` the tool
    its task runs (a client cannot send this type: only gateway/tasks.py makes one)."""

    tool: str = ""
    member: str = ""
    asked_as: str = ""  # the gateway's task id the client sent


def mint(handle: Handle) -> str:
    return PREFIX + sealing.seal(json.dumps(asdict(handle)).encode(), context=CONTEXT)


def handle_of(task_id, owner: str, target: str) -> Handle | None:
    """The task a gateway task id names, when it is the caller's at this target; None otherwise."""
    if not isinstance(task_id, str) or not task_id.startswith(PREFIX) or len(task_id) > 4096:
        return None
    try:
        handle = Handle(**json.loads(sealing.unseal(task_id.removeprefix(PREFIX), context=CONTEXT)))
    except (sealing.Unsealable, ValueError, TypeError):
        return None
    return handle if (handle.owner, handle.target) == (owner, target) else None


def declares(message: dict) -> bool:
    """Whether a request declares the tasks extension in its per-request capabilities."""
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    capabilities = meta.get(CLIENT_CAPABILITIES) if isinstance(meta.get(CLIENT_CAPABILITIES), dict) else {}
    extensions = capabilities.get("extensions") if isinstance(capabilities.get("extensions"), dict) else {}
    return EXTENSION in extensions


def missing_capability(request_id) -> dict:
    """The answer to a task request that does not declare the extension (-32021, as it requires)."""
    answer = jsonrpc.error_message(request_id, MISSING_CAPABILITY, "Missing required client capability")
    answer["error"]["data"] = {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}
    return answer


class TaskNames:
    """What one request's tasks are called, both ways: the calls that may create a task (request id →
    (member key, tool)), and the task requests' ids (request id → (the gateway's id, the server's))."""

    def __init__(self, owner: str, target: str):
        self.owner, self.target = owner, target
        self.calls: dict[str, tuple[str, str]] = {}
        self.asked: dict[str, tuple[str, str]] = {}
        self.listening = False  # the request is a `subscriptions/listen` that named tasks
        self.listened: dict[str, str] = {}  # the server's id → the gateway's, of the tasks listened to

    def __bool__(self) -> bool:
        return bool(self.calls or self.asked or self.listening)

    @property
    def rewritten(self) -> bool:
        """Whether the body names the server's ids now (it goes on as rewritten)."""
        return bool(self.asked) or self.listening

    def reads(self, data: bytes) -> bool:
        """Whether an event's data may hold a task id to rename (gateway/streams.py asks)."""
        return b'"taskId' in data

    def event_id(self, line: bytes) -> bytes:
        return line

    def __call__(self, message):
        """An answer of the server with the gateway's task ids (a batch item by item)."""
        if isinstance(message, list):
            return [self(item) for item in message]
        if self.listening and isinstance(message, dict) and "id" not in message:
            return self._notification(message)
        result = message.get("result") if isinstance(message, dict) and "id" in message else None
        if not isinstance(result, dict):
            return message
        key = jsonrpc.id_key(message["id"])
        if key in self.calls and result.get("resultType") == "task" and isinstance(result.get("taskId"), str):
            member, tool = self.calls[key]
            ours = mint(Handle(self.owner, self.target, member, result["taskId"], tool))
            return {**message, "result": {**result, "taskId": ours}}
        if key in self.asked and "taskId" in result:
            return {**message, "result": {**result, "taskId": self.asked[key][0]}}
        return message

    def _notification(self, message: dict) -> dict:
        """A task status notification, or the acknowledgement of a listen, with the gateway's ids (an
        acknowledged id the caller did not listen to is dropped)."""
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        if message.get("method") == NOTIFIED and params.get("taskId") in self.listened:
            return {**message, "params": {**params, "taskId": self.listened[params["taskId"]]}}
        notifications = params.get("notifications") if isinstance(params.get("notifications"), dict) else {}
        if message.get("method") == ACKNOWLEDGED and isinstance(notifications.get("taskIds"), list):
            ours = [self.listened[i] for i in notifications["taskIds"] if i in self.listened]
            return {**message, "params": {**params, "notifications": {**notifications, "taskIds": ours}}}
        return message

    def outbound_headers(self) -> dict[str, str]:
        """The `Mcp-Name` of a lone task request: the server's own id, as its body names it."""
        if len(self.asked) == 1 and not self.calls:
            return {"mcp-name": next(iter(self.asked.values()))[1]}
        return {}


class Both:
    """Two renamings of one stream's messages, `first` then `second` (a virtual member's, then its tasks')."""

    def __init__(self, first, second):
        self.first, self.second = first, second

    def reads(self, data: bytes) -> bool:
        return self.first.reads(data) or self.second.reads(data)

    def event_id(self, line: bytes) -> bytes:
        return self.second.event_id(self.first.event_id(line))

    def __call__(self, message):
        return self.second(self.first(message))


def noted(names: TaskNames, message: dict, member: str) -> TaskNames:
    """`names`, noting a `tools/call` that may create a task (its request declares the extension), by the
    tool's name as the caller called it, at `member` (a virtual server's member key, "" for a server)."""
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    called = message.get("method") == jsonrpc.TOOLS_CALL and isinstance(params.get("name"), str)
    if called and declares(message):
        names.calls[jsonrpc.id_key(message["id"])] = (member, params["name"])
    return names


def resolved(
    payload, owner: str, target: str, *, calls: bool = True, may_call=None
) -> tuple[object, list[dict], TaskNames]:
    """(the body with each task request resolved, the "task not found" answers of those that are not the
    caller's here, what the answers' task ids are called). With `calls` (a server's; a virtual server
    notes its own once the member is known: `noted`), the calls that may create a task are noted too, and
    a `subscriptions/listen` keeps the caller's own tasks whose tool `may_call(tool)` allows."""
    names = TaskNames(owner, target)
    refused: list[dict] = []
    items = payload if isinstance(payload, list) else [payload]
    kept = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("method"), str) or "id" not in item:
            kept.append(item)
            continue
        params = item.get("params") if isinstance(item.get("params"), dict) else {}
        key = jsonrpc.id_key(item["id"])
        if item["method"] in jsonrpc.TASK_METHODS:
            handle = handle_of(params.get("taskId"), owner, target)
            if handle is None:
                refused.append(jsonrpc.error_message(item["id"], INVALID_PARAMS, NOT_FOUND))
                continue
            request = ResolvedTask({**item, "params": {**params, "taskId": handle.upstream}})
            request.tool, request.member, request.asked_as = handle.tool, handle.member, params["taskId"]
            names.asked[key] = (params["taskId"], handle.upstream)
            kept.append(request)
            continue
        if calls and item["method"] == LISTEN and isinstance(params.get("notifications"), dict):
            kept.append(_listen(names, item, params, may_call))
            continue
        if calls:
            noted(names, item, "")
        kept.append(item)
    body = kept if isinstance(payload, list) else (kept[0] if kept else None)
    return body, refused, names


def _listen(names: TaskNames, item: dict, params: dict, may_call) -> dict:
    """A `subscriptions/listen` naming only the server's ids of the caller's own tasks here, each of a
    tool the caller may still call (`names` learns them)."""
    notifications = params["notifications"]
    if "taskIds" not in notifications:
        return item
    asked = notifications["taskIds"] if isinstance(notifications["taskIds"], list) else []
    names.listening = True
    for task_id in asked:
        handle = handle_of(task_id, names.owner, names.target)
        if handle is not None and not handle.member and (may_call is None or may_call(handle.tool)):
            names.listened[handle.upstream] = task_id
    kept = {**notifications, "taskIds": list(names.listened)}
    return {**item, "params": {**params, "notifications": kept}}
