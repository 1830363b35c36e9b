"""Tasks belong to their caller. A task (and its context) is the caller's whose message created it: the
ids in the answers to `SendMessage` / `SendStreamingMessage` (v0.3 `message/send`, `message/stream`) are
claimed for the caller in Redis, the first claim standing, so every web process agrees. A request that
names a task (get, cancel, subscribe, push configs; a message continuing a task) is answered "task not
found" unless the caller owns it, as for a task that does not exist; a message into a context another
caller owns likewise; `ListTasks` shows the caller's own tasks only."""

from __future__ import annotations

import redis

from agents.a2a import MESSAGE_METHODS
from core.redis_clients import async_client
from gateway import sessions

TTL_SECONDS = 7 * 24 * 60 * 60  # a task's owner is remembered a week after it was last named
TASK_NOT_FOUND = -32001  # A2A's TaskNotFoundError

SENDS = MESSAGE_METHODS
STREAMS = frozenset({"SendStreamingMessage", "SubscribeToTask", "message/stream", "tasks/resubscribe"})
BY_ID = frozenset(
    {
        "GetTask",
        "CancelTask",
        "SubscribeToTask",
        "tasks/get",
        "tasks/cancel",
        "tasks/resubscribe",
        "tasks/pushNotificationConfig/get",
        "tasks/pushNotificationConfig/list",
        "tasks/pushNotificationConfig/delete",
    }
)
BY_TASK_ID = frozenset(
    {
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
        "tasks/pushNotificationConfig/set",
    }
)
LISTS = frozenset({"ListTasks"})


class TasksUnavailable(sessions.SessionsUnavailable):
    """Redis could not say whose a task is: nothing that names one is forwarded (answered 503)."""


KINDS = {"task": sessions.Kind.A2A_TASK, "context": sessions.Kind.A2A_CONTEXT}


def _key(kind: str, agent_path: str, identifier: str) -> str:
    return sessions.key(KINDS[kind], agent_path, identifier)


def created(result) -> tuple[set[str], set[str]]:
    """(task ids, context ids) an answer or a streamed event shows (v1.0 and v0.3 shapes)."""
    tasks: set[str] = set()
    contexts: set[str] = set()

    def visit(node, depth: int) -> None:
        if depth > 4 or not isinstance(node, dict):
            return
        if isinstance(node.get("taskId"), str):
            tasks.add(node["taskId"])
        if isinstance(node.get("contextId"), str):
            contexts.add(node["contextId"])
        if isinstance(node.get("id"), str) and ("status" in node or node.get("kind") == "task"):
            tasks.add(node["id"])
        for key in ("task", "message", "statusUpdate", "artifactUpdate", "status"):
            visit(node.get(key), depth + 1)

    visit(result, 0)
    return tasks, contexts


async def owns(agent_path: str, owner: str, tasks: list[str], contexts: list[str]) -> bool:
    """Whether every named task is the caller's and no named context is another caller's."""
    if not tasks and not contexts:
        return True
    keys = [_key("task", agent_path, t) for t in tasks] + [_key("context", agent_path, c) for c in contexts]
    try:
        found = await async_client().mget(keys)
    except redis.RedisError as error:
        raise TasksUnavailable from error
    of_tasks, of_contexts = found[: len(tasks)], found[len(tasks) :]
    return all(value == owner.encode() for value in of_tasks) and all(
        value in (None, owner.encode()) for value in of_contexts
    )


async def claim(agent_path: str, owner: str, tasks, contexts) -> None:
    """The tasks and contexts an answer to the caller's message shows are the caller's (the first claim
    stands: a task another caller already owns stays theirs)."""
    if not tasks and not contexts:
        return
    pipe = async_client().pipeline(transaction=False)
    for kind, ids in (("task", tasks), ("context", contexts)):
        for identifier in ids:
            pipe.set(_key(kind, agent_path, identifier), owner, nx=True, ex=TTL_SECONDS)
    try:
        await pipe.execute()
    except redis.RedisError as error:
        raise TasksUnavailable from error


async def own_only(agent_path: str, owner: str, listed: list) -> list:
    """The tasks of a `ListTasks` answer that are the caller's."""
    ids = [task.get("id") if isinstance(task, dict) else None for task in listed]
    keys = [_key("task", agent_path, i) for i in ids if isinstance(i, str)]
    try:
        owners = dict(zip(keys, await async_client().mget(keys), strict=True)) if keys else {}
    except redis.RedisError as error:
        raise TasksUnavailable from error
    return [
        task
        for task, i in zip(listed, ids, strict=True)
        if isinstance(i, str) and owners.get(_key("task", agent_path, i)) == owner.encode()
    ]
