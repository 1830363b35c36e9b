"""Sessions belong to the caller that opened them, in Redis so any gateway process can tell.

- Streamable HTTP: when a forwarded `initialize` is answered with an `Mcp-Session-Id`, the session is bound
  to the caller. A request that carries a session id is forwarded only for that caller; anyone else (or a
  session the gateway never saw opened) gets 404, as the transport answers a session that does not exist.
- The SSE transport: the stream (`/<path>/sse`) tells the client where to post its messages; the gateway
  rewrites that endpoint to its own `/<path>/messages/?session_id=...` and keeps the server's real
  endpoint with the caller it belongs to, so a message reaches the right server from any gateway process
  and never lands in another caller's stream.

Bindings live a day after their last use (SESSION_TTL_SECONDS); a DELETE of the session ends its binding.

Everything the gateway keeps in Redis about sessions, streams and tasks is under one key builder (`key`,
by `Kind`), and the JSON records of every kind (a session held for a caller without a credential, a
virtual session, an SSE stream's endpoint or binding) are read, written and forgotten by one store here
(`record`, `keep`, `forget`); owners and A2A task claims are single values (`bind`, gateway/a2a/tasks.py).

A session's owner never changes, so each process keeps the owners it has seen (OWNERS) and asks Redis
again only to keep a binding alive (every REFRESH_SECONDS of use) or while the push of ended sessions is
not proven current (core/epoch_watch.py): a DELETE through any process is pushed to every other, which
then answers 404 for it, within TRUST_SECONDS even if the push is lost.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from enum import StrEnum
from urllib.parse import parse_qs, urljoin, urlsplit

import redis

from accounts.principal import Principal
from core.epoch_watch import WATCH
from core.redis_clients import async_client, sync_client

TTL_SECONDS = 24 * 60 * 60
REFRESH_SECONDS = 60.0
MAX_KNOWN_OWNERS = 100_000


def owner(principal: Principal) -> str:
    """Who a session belongs to: the caller's identity, whichever of its credentials it presents."""
    return f"{principal.auth_method or ''}:{principal.provider or ''}:{principal.username}"


class Kind(StrEnum):
    """The kinds of what the gateway keeps in Redis about sessions, streams and tasks, each under the one
    key builder (`key`): every kind has its own family of keys, and no module builds a key by hand."""

    OWNER = "owner"  # who a session belongs to (this module)
    SSE = "sse"  # an SSE-transport session's real endpoint, with its caller (this module)
    DEFERRED = "deferred"  # a session held before its caller connected a credential (gateway/deferred.py)
    VIRTUAL = "virtual"  # a caller's virtual session and its members' sessions (gateway/virtual/sessions.py)
    VIRTUAL_SSE = "virtual-sse"  # a virtual server's SSE stream and the channel holding it (virtual/sse.py)
    A2A_TASK = "a2a:task"  # whose an A2A task is (gateway/a2a/tasks.py)
    A2A_CONTEXT = "a2a:context"  # whose an A2A context is (gateway/a2a/tasks.py)
    VIRTUAL_A2A_TASK = "virtual:a2a-task"  # a slow tool's task at a virtual A2A face (virtual/a2a.py)


def digest(identifier: str) -> str:
    """An identifier a client or an upstream chose, as it goes into a key (fixed length, any text)."""
    return hashlib.sha256(identifier.encode("utf-8", "surrogatepass")).hexdigest()


def key(kind: Kind, path: str, identifier: str) -> str:
    """The one key builder: `registry:gateway:<kind>:<target path>:<digest of the identifier>`."""
    return f"registry:gateway:{kind}:{path}:{digest(identifier)}"


def _session_key(server_path: str, session_id: str) -> str:
    return key(Kind.OWNER, server_path, session_id)


def _sse_key(server_path: str, session_id: str) -> str:
    return key(Kind.SSE, server_path, session_id)


class SessionsUnavailable(Exception):
    """Redis could not be asked who a session belongs to: nothing of the session is forwarded."""


# The one store of the JSON records the gateway keeps by kind (a held session, a virtual session, an SSE
# stream's binding): read, written and forgotten alike, each living TTL_SECONDS after its last write
# (or read, with `renew`). SessionsUnavailable when Redis cannot answer a read or a write.


async def record(kind: Kind, path: str, identifier: str, *, renew: bool = False) -> dict | None:
    """The record of `kind` at (path, identifier), or None; `renew` keeps it alive another TTL."""
    at = key(kind, path, identifier)
    try:
        client = async_client()
        raw = await (client.getex(at, ex=TTL_SECONDS) if renew else client.get(at))
    except redis.RedisError as error:
        raise SessionsUnavailable from error
    return json.loads(raw) if raw is not None else None


async def keep(kind: Kind, path: str, identifier: str, value: dict) -> None:
    try:
        await async_client().set(key(kind, path, identifier), json.dumps(value), ex=TTL_SECONDS)
    except redis.RedisError as error:
        raise SessionsUnavailable from error


async def forget(kind: Kind, path: str, identifier: str, *also: str) -> None:
    """The record gone (with the keys `also` names beside it); one Redis cannot reach expires by itself."""
    at = key(kind, path, identifier)
    try:
        await async_client().delete(at, *(at + suffix for suffix in also))
    except redis.RedisError:
        pass


class KnownOwners:
    """The owners of sessions this process has seen, each with when Redis last kept its binding alive."""

    def __init__(self):
        self._owners: OrderedDict[str, tuple[str, float]] = OrderedDict()
        self._lock = threading.Lock()
        self.generation = 0  # bumped by every ended session: an answer read before it is not kept

    def get(self, key: str) -> str | None:
        entry = self._owners.get(key)
        if entry is None or time.monotonic() - entry[1] >= REFRESH_SECONDS or not WATCH.trusted():
            return None
        return entry[0]

    def put(self, key: str, found: str, generation: int) -> None:
        with self._lock:
            if generation != self.generation:
                return
            self._owners[key] = (found, time.monotonic())
            self._owners.move_to_end(key)
            while len(self._owners) > MAX_KNOWN_OWNERS:
                self._owners.popitem(last=False)

    def gone(self, key: str) -> None:
        with self._lock:
            self.generation += 1
            self._owners.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self.generation += 1
            self._owners.clear()


OWNERS = KnownOwners()
WATCH.on_gone.append(OWNERS.gone)
WATCH.on_reset.append(OWNERS.clear)


async def bind(server_path: str, session_id: str, principal: Principal) -> None:
    """The session a forwarded `initialize` opened belongs to its caller."""
    key, generation = _session_key(server_path, session_id), OWNERS.generation
    try:
        await async_client().set(key, owner(principal), ex=TTL_SECONDS)
    except redis.RedisError as error:
        raise SessionsUnavailable from error
    OWNERS.put(key, owner(principal), generation)


async def belongs_to(server_path: str, session_id: str, principal: Principal) -> bool:
    """Whether the caller opened this session (its binding is kept alive by the use)."""
    key = _session_key(server_path, session_id)
    found = OWNERS.get(key)
    if found is None:
        generation = OWNERS.generation
        try:
            value = await async_client().getex(key, ex=TTL_SECONDS)
        except redis.RedisError as error:
            raise SessionsUnavailable from error
        if value is None:
            return False
        found = value.decode()
        OWNERS.put(key, found, generation)
    return found == owner(principal)


async def unbind(server_path: str, session_id: str) -> None:
    key = _session_key(server_path, session_id)
    OWNERS.gone(key)
    try:
        pipe = async_client().pipeline(transaction=False)  # the DELETE stands even if PUBLISH is refused
        pipe.delete(key)
        pipe.publish(*WATCH.gone_message(key))
        await pipe.execute()
    except redis.RedisError:
        pass  # the binding expires by itself


def rewrite_endpoint(server_path: str, stream_url: str, principal: Principal, data: bytes) -> bytes:
    """The gateway's endpoint for the server's `data` (remembered with its caller, keyed by session id)."""
    upstream = urljoin(stream_url, data.decode("utf-8", "replace").strip())
    if urlsplit(upstream)[:2] != urlsplit(stream_url)[:2]:  # the server may not send clients elsewhere
        return data
    session_id = (parse_qs(urlsplit(upstream).query).get("session_id") or [""])[0]
    if not session_id:
        return data
    value = json.dumps({"url": upstream, "owner": owner(principal)})
    try:  # sync: an endpoint is written once per stream, before the client can use it
        sync_client().set(_sse_key(server_path, session_id), value, ex=TTL_SECONDS)
    except redis.RedisError:
        return data
    return f"{server_path}/messages/?session_id={session_id}".encode()


async def upstream_endpoint(server_path: str, session_id: str, principal: Principal) -> str | None:
    """The server's endpoint of the caller's SSE session; None for a session that is not the caller's."""
    if not session_id:
        return None
    found = await record(Kind.SSE, server_path, session_id)
    if found is None:
        return None
    return found["url"] if found.get("owner") == owner(principal) else None
