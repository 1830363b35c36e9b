"""The SSE transport's sessions: the stream (`/<path>/sse`) tells the client where to post its messages;
the gateway rewrites that endpoint to its own `/<path>/messages/?session_id=...` and keeps the server's
real endpoint in Redis (a day), so a message reaches the right server from any gateway process."""

from __future__ import annotations

from urllib.parse import parse_qs, urljoin, urlsplit

import redis

from registry_site.redis_clients import async_client, sync_client

TTL_SECONDS = 24 * 60 * 60


def _key(server_path: str, session_id: str) -> str:
    return f"registry:gateway:sse:{server_path}:{session_id[:200]}"


def rewrite_endpoint(server_path: str, stream_url: str, data: bytes) -> bytes:
    """The gateway's endpoint for the server's `data` (remembered, keyed by its session id)."""
    upstream = urljoin(stream_url, data.decode("utf-8", "replace").strip())
    if urlsplit(upstream)[:2] != urlsplit(stream_url)[:2]:  # the server may not send clients elsewhere
        return data
    session_id = (parse_qs(urlsplit(upstream).query).get("session_id") or [""])[0]
    if not session_id:
        return data
    try:  # sync: an endpoint is written once per stream, before the client can use it
        sync_client().set(_key(server_path, session_id), upstream, ex=TTL_SECONDS)
    except redis.RedisError:
        return data
    return f"{server_path}/messages/?session_id={session_id}".encode()


async def upstream_endpoint(server_path: str, session_id: str) -> str | None:
    if not session_id:
        return None
    value = await async_client().get(_key(server_path, session_id))
    return value.decode() if value else None
