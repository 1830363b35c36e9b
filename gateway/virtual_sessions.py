"""A caller's session with a virtual server: the gateway is the server the client talks to, so it opens
the session itself (its id starts with PREFIX and is bound to the caller like any other) and keeps, in
Redis, what the session's later requests need on any process: the client's `initialize`, each member's
own session once opened (gateway/virtual_members.py), and the names the last lists showed (so a call
reaches the member whose list showed the name)."""

from __future__ import annotations

import json

import redis

from core.redis_clients import async_client
from gateway import sessions

PREFIX = "registry-virtual-"


def _key(virtual_path: str, session_id: str) -> str:
    return f"registry:gateway:virtual:{virtual_path}:{sessions._digest(session_id)}"


def new_record(init_params: dict) -> dict:
    return {"init": init_params, "members": {}, "tools": {}, "prompts": {}}


async def load(virtual_path: str, session_id: str) -> dict | None:
    try:
        raw = await async_client().get(_key(virtual_path, session_id))
    except redis.RedisError as error:
        raise sessions.SessionsUnavailable from error
    return json.loads(raw) if raw is not None else None


async def keep(virtual_path: str, session_id: str, record: dict) -> None:
    try:
        await async_client().set(_key(virtual_path, session_id), json.dumps(record), ex=sessions.TTL_SECONDS)
    except redis.RedisError as error:
        raise sessions.SessionsUnavailable from error


async def forget(virtual_path: str, session_id: str) -> None:
    try:
        await async_client().delete(_key(virtual_path, session_id))
    except redis.RedisError:
        pass  # it expires by itself
