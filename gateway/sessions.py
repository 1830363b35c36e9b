"""Sessions belong to the caller that opened them, in Redis so any gateway process can tell.

- Streamable HTTP: when a forwarded `initialize` is answered with an `Mcp-Session-Id`, the session is bound
  to the caller. A request that carries a session id is forwarded only for that caller; anyone else (or a
  session the gateway never saw opened) gets 404, as the transport answers a session that does not exist.
- The SSE transport: the stream (`/<path>/sse`) tells the client where to post its messages; the gateway
  rewrites that endpoint to its own `/<path>/messages/?session_id=...` and keeps the server's real
  endpoint with the caller it belongs to, so a message reaches the right server from any gateway process
  and never lands in another caller's stream.

Bindings live a day after their last use (SESSION_TTL_SECONDS); a DELETE of the session ends its binding.
"""

from __future__ import annotations

import hashlib
import json
from urllib.parse import parse_qs, urljoin, urlsplit

import redis

from accounts.principal import Principal
from core.redis_clients import async_client, sync_client

TTL_SECONDS = 24 * 60 * 60


def owner(principal: Principal) -> str:
    """Who a session belongs to: the caller's identity, whichever of its credentials it presents."""
    return f"{principal.auth_method or ''}:{principal.provider or ''}:{principal.username}"


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()


def _session_key(server_path: str, session_id: str) -> str:
    return f"registry:gateway:owner:{server_path}:{_digest(session_id)}"


def _sse_key(server_path: str, session_id: str) -> str:
    return f"registry:gateway:sse:{server_path}:{_digest(session_id)}"


class SessionsUnavailable(Exception):
    """Redis could not be asked who a session belongs to: nothing of the session is forwarded."""


async def bind(server_path: str, session_id: str, principal: Principal) -> None:
    """The session a forwarded `initialize` opened belongs to its caller."""
    try:
        await async_client().set(_session_key(server_path, session_id), owner(principal), ex=TTL_SECONDS)
    except redis.RedisError as error:
        raise SessionsUnavailable from error


async def belongs_to(server_path: str, session_id: str, principal: Principal) -> bool:
    """Whether the caller opened this session (its binding is kept alive by the use)."""
    try:
        found = await async_client().getex(_session_key(server_path, session_id), ex=TTL_SECONDS)
    except redis.RedisError as error:
        raise SessionsUnavailable from error
    return found is not None and found.decode() == owner(principal)


async def unbind(server_path: str, session_id: str) -> None:
    try:
        await async_client().delete(_session_key(server_path, session_id))
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
    try:
        value = await async_client().get(_sse_key(server_path, session_id))
    except redis.RedisError as error:
        raise SessionsUnavailable from error
    if value is None:
        return None
    found = json.loads(value)
    return found["url"] if found.get("owner") == owner(principal) else None
