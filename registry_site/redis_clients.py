"""Clients of the registry's Redis (REDIS_URL): one synchronous client per process and one asyncio client
per event loop (an asyncio client cannot move between loops).

The synchronous pool blocks: a thread that finds REDIS_POOL_MAX_CONNECTIONS connections busy waits up to
REDIS_POOL_TIMEOUT_SECONDS for one instead of failing at once. The asyncio pools (this client's and the
channel layer's) hold up to REDIS_POOL_MAX_CONNECTIONS each and raise MaxConnectionsError beyond, which
the websocket consumers answer with a 1013 close (an asyncio blocking pool could not be cancelled cleanly
when its event loop closed)."""

import asyncio
import weakref
from functools import lru_cache

import redis
import redis.asyncio
from django.conf import settings

TIMEOUTS = {"socket_timeout": 5, "socket_connect_timeout": 5}

_async_clients: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, redis.asyncio.Redis]" = (
    weakref.WeakKeyDictionary()
)


@lru_cache(maxsize=1)
def sync_client() -> redis.Redis:
    pool = redis.BlockingConnectionPool.from_url(
        settings.REDIS_URL,
        max_connections=settings.REDIS_POOL_MAX_CONNECTIONS,
        timeout=settings.REDIS_POOL_TIMEOUT_SECONDS,
        **TIMEOUTS,
    )
    return redis.Redis(connection_pool=pool)


def async_client() -> redis.asyncio.Redis:
    """The asyncio client of the running event loop."""
    loop = asyncio.get_running_loop()
    client = _async_clients.get(loop)
    if client is None:
        client = _async_clients[loop] = redis.asyncio.Redis.from_url(
            settings.REDIS_URL, max_connections=settings.REDIS_POOL_MAX_CONNECTIONS, **TIMEOUTS
        )
    return client
