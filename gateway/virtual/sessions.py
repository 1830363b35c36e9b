"""A caller's session with a virtual server: the gateway is the server the client talks to, so it opens
the session itself (its id starts with PREFIX and is bound to the caller like any other) and keeps, in
Redis, what the session's later requests need on any process: the client's `initialize`, each member's
own session once opened (gateway/virtual/members.py), and the names the last lists showed (so a call
reaches the member whose list showed the name).

Each member's session is claimed in a hash of its own beside the record (`claim_member`): the first
opening stored wins, in every process, and a record only ever holds the winners. Two requests of one
client that open the same member at once (its GET stream and its first call) must not each keep their own
session with it: a member's request to the client would go out on one, and the client's answer to the
other. Each process remembers the records it read or wrote (RECORDS), so a session's calls read Redis only
for what this process has not seen: a member session missing here is looked for in the hash before one is
opened (`members_of`). A record another process changed is at worst older here by names it listed, which a
call then finds by listing again; the session's binding (gateway/sessions.py), not this memory, decides
whether the session still exists."""

from __future__ import annotations

import json
from collections import OrderedDict
from threading import Lock

import redis

from core.redis_clients import async_client
from gateway import sessions

PREFIX = "registry-virtual-"
MEMBERS = ":members"  # the hash of the members' sessions, beside a session's record
REMEMBERED = 10_000


class _Records:
    def __init__(self):
        self._lock = Lock()
        self._entries: OrderedDict = OrderedDict()

    def get(self, key):
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key, record: dict) -> None:
        with self._lock:
            self._entries[key] = record
            self._entries.move_to_end(key)
            while len(self._entries) > REMEMBERED:
                self._entries.popitem(last=False)

    def drop(self, key) -> None:
        with self._lock:
            self._entries.pop(key, None)


RECORDS = _Records()


def _key(virtual_path: str, session_id: str) -> str:
    return sessions.key(sessions.Kind.VIRTUAL, virtual_path, session_id)


def stateless_id(owner: str) -> str:
    """The session the gateway keeps for a 2026-07-28 caller (whose clients open none)."""
    return f"{PREFIX}stateless-{sessions.digest(owner)}"


def new_record(init_params: dict) -> dict:
    return {"init": init_params, "members": {}, "tools": {}, "prompts": {}}


async def load(virtual_path: str, session_id: str) -> dict | None:
    """The session's record: this process's copy when it has one, else Redis's."""
    remembered = RECORDS.get(_key(virtual_path, session_id))
    return remembered if remembered is not None else await fresh(virtual_path, session_id)


async def fresh(virtual_path: str, session_id: str) -> dict | None:
    """The session's record as Redis has it now."""
    record = await sessions.record(sessions.Kind.VIRTUAL, virtual_path, session_id)
    if record is not None:
        RECORDS.put(_key(virtual_path, session_id), record)
    return record


async def keep(virtual_path: str, session_id: str, record: dict) -> None:
    key = _key(virtual_path, session_id)
    try:
        async with async_client().pipeline(transaction=False) as pipe:
            pipe.set(key, json.dumps(record), ex=sessions.TTL_SECONDS)
            pipe.expire(key + MEMBERS, sessions.TTL_SECONDS)  # the claims live as long as the record
            await pipe.execute()
    except redis.RedisError as error:
        raise sessions.SessionsUnavailable from error
    RECORDS.put(key, record)


async def members_of(virtual_path: str, session_id: str) -> dict[str, str]:
    """{member key: its session} of every member session claimed so far."""
    try:
        claimed = await async_client().hgetall(_key(virtual_path, session_id) + MEMBERS)
    except redis.RedisError as error:
        raise sessions.SessionsUnavailable from error
    return {key.decode(): value.decode() for key, value in claimed.items()}


async def claim_member(virtual_path: str, session_id: str, member_key: str, opened: str) -> str:
    """The member's session of this virtual session: `opened` when it is the first claimed, else the one
    claimed before it (whose opener won; `opened` is then the caller's to close)."""
    claims = _key(virtual_path, session_id) + MEMBERS
    try:
        async with async_client().pipeline(transaction=True) as pipe:
            pipe.hsetnx(claims, member_key, opened)
            pipe.hget(claims, member_key)
            pipe.expire(claims, sessions.TTL_SECONDS)
            _, winner, _ = await pipe.execute()
    except redis.RedisError as error:
        raise sessions.SessionsUnavailable from error
    return winner.decode()


async def forget(virtual_path: str, session_id: str) -> None:
    RECORDS.drop(_key(virtual_path, session_id))
    await sessions.forget(sessions.Kind.VIRTUAL, virtual_path, session_id, MEMBERS)
