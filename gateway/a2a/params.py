"""What an A2A request names (tasks, contexts, push-notification URLs), read as the agent will read it: the
params are parsed by the binding's own models from `a2a-sdk` (v1.0: its protobuf messages, for JSON-RPC
and HTTP+JSON; v0.3: its pydantic models for JSON-RPC, its v0.3 protobuf messages for HTTP+JSON). Those
models accept camelCase and snake_case alike (`taskId`, `task_id`), so the gateway judges whichever the
client sent. A field spelled both ways in one object is refused: agents disagree on which one wins.
Params the model cannot read are refused too, as the agent would refuse them.

A REST request's task is its path's (the agent reads it there), and `ListTasks`' context its query's."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import parse_qs

from a2a.compat.v0_3 import a2a_v0_3_pb2 as rest_v03
from a2a.compat.v0_3 import types as jsonrpc_v03
from a2a.types import a2a_pb2 as v1
from google.protobuf.json_format import MessageToDict, ParseDict, ParseError
from pydantic import ValidationError

from gateway.a2a.tasks import BY_ID, BY_TASK_ID, LISTS, SENDS

DEPTH_MAX = 32  # objects deeper than this are not searched for a second spelling (json_loads bounds depth)
_CAMEL = re.compile(r"_([a-z0-9])")

V1 = {
    "SendMessage": v1.SendMessageRequest,
    "SendStreamingMessage": v1.SendMessageRequest,
    "GetTask": v1.GetTaskRequest,
    "ListTasks": v1.ListTasksRequest,
    "CancelTask": v1.CancelTaskRequest,
    "SubscribeToTask": v1.SubscribeToTaskRequest,
    "CreateTaskPushNotificationConfig": v1.TaskPushNotificationConfig,
    "GetTaskPushNotificationConfig": v1.GetTaskPushNotificationConfigRequest,
    "ListTaskPushNotificationConfigs": v1.ListTaskPushNotificationConfigsRequest,
    "DeleteTaskPushNotificationConfig": v1.DeleteTaskPushNotificationConfigRequest,
    "GetExtendedAgentCard": v1.GetExtendedAgentCardRequest,
}
JSONRPC_V03 = {
    "message/send": jsonrpc_v03.MessageSendParams,
    "message/stream": jsonrpc_v03.MessageSendParams,
    "tasks/get": jsonrpc_v03.TaskQueryParams,
    "tasks/cancel": jsonrpc_v03.TaskIdParams,
    "tasks/resubscribe": jsonrpc_v03.TaskIdParams,
    "tasks/pushNotificationConfig/set": jsonrpc_v03.TaskPushNotificationConfig,
    "tasks/pushNotificationConfig/get": jsonrpc_v03.GetTaskPushNotificationConfigParams,
    "tasks/pushNotificationConfig/list": jsonrpc_v03.ListTaskPushNotificationConfigParams,
    "tasks/pushNotificationConfig/delete": jsonrpc_v03.DeleteTaskPushNotificationConfigParams,
}
REST_V03 = {  # v0.3's HTTP+JSON bodies (the other operations have none)
    "SendMessage": rest_v03.SendMessageRequest,
    "SendStreamingMessage": rest_v03.SendMessageRequest,
    "CreateTaskPushNotificationConfig": rest_v03.CreateTaskPushNotificationConfigRequest,
}
# Where each shape holds a push-notification URL (`url` in the object at that path).
PUSH_HOLDERS = (
    (),  # v1.0 CreateTaskPushNotificationConfig
    ("pushNotificationConfig",),  # v0.3 tasks/pushNotificationConfig/set
    ("configuration", "taskPushNotificationConfig"),  # v1.0 messages
    ("configuration", "pushNotificationConfig"),  # v0.3 JSON-RPC messages
    ("configuration", "pushNotification"),  # v0.3 HTTP+JSON messages
    ("config", "pushNotificationConfig"),  # v0.3 HTTP+JSON CreateTaskPushNotificationConfig
)


class ParamsRefused(ValueError):
    """Params the gateway will not judge (nor forward): spelled twice, or unreadable by the binding."""


@dataclass(frozen=True)
class Named:
    tasks: list[str] = field(default_factory=list)
    contexts: list[str] = field(default_factory=list)
    push_urls: list = field(default_factory=list)


def named(call) -> Named:
    """What `call` names, as its binding's models read it; ParamsRefused when they cannot."""
    _refuse_second_spellings(call.params, 0)
    read = _read(call)
    message = read.get("message") if isinstance(read.get("message"), dict) else {}
    tasks, contexts = [], []
    if call.method in SENDS:
        tasks = [message.get("taskId"), *_list(message.get("referenceTaskIds"))]
        contexts = [message.get("contextId")]
    elif call.method in BY_ID:
        tasks = [read.get("id")]
    elif call.method in BY_TASK_ID:
        tasks = [read.get("taskId")]
    elif call.method in LISTS:
        contexts = [_query_context(call.query) if call.rest else read.get("contextId")]
    if call.path_task is not None:  # REST: the agent reads the task in the path
        tasks = [call.path_task]
    return Named(
        tasks=[t for t in tasks if isinstance(t, str) and t],
        contexts=[c for c in contexts if isinstance(c, str) and c],
        push_urls=_push_urls(read),
    )


def _read(call) -> dict:
    """The params as the agent's model reads them, in camelCase."""
    try:
        if call.legacy and not call.rest:
            model = JSONRPC_V03.get(call.method)
            read = model.model_validate(call.params) if model else None
            return read.model_dump(by_alias=True, exclude_none=True) if read else {}
        model = (REST_V03 if call.legacy else V1).get(call.method)
        return MessageToDict(ParseDict(call.params, model(), ignore_unknown_fields=True)) if model else {}
    except (ParseError, ValidationError, ValueError, TypeError, RecursionError) as error:
        raise ParamsRefused(f"The params of {call.method} cannot be read: {_first_line(error)}") from None


def _refuse_second_spellings(node, depth: int) -> None:
    if depth > DEPTH_MAX:
        return
    if isinstance(node, list):
        for item in node:
            _refuse_second_spellings(item, depth + 1)
    if not isinstance(node, dict):
        return
    seen: dict[str, str] = {}
    for key in node:
        if not isinstance(key, str):
            continue
        camel = _CAMEL.sub(lambda found: found.group(1).upper(), key)
        if camel in seen:
            raise ParamsRefused(f"'{seen[camel][:100]}' and '{key[:100]}' are one field: send it once.")
        seen[camel] = key
    for value in node.values():
        _refuse_second_spellings(value, depth + 1)


def _push_urls(read: dict) -> list:
    urls = []
    for path in PUSH_HOLDERS:
        holder = read
        for key in path:
            holder = holder.get(key) if isinstance(holder, dict) else None
        if isinstance(holder, dict) and "url" in holder:
            urls.append(holder["url"])
    return urls


def _query_context(query: str) -> str | None:
    given = parse_qs(query)
    spellings = [name for name in ("contextId", "context_id") if name in given]
    if len(spellings) > 1 or any(len(given[name]) > 1 for name in spellings):
        raise ParamsRefused("contextId is one field: send it once.")
    return given[spellings[0]][0] if spellings else None


def _list(value) -> list:
    return value if isinstance(value, list) else []


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0][:300] if str(error).strip() else type(error).__name__
