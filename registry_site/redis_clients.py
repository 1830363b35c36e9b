"""Clients of the registry's Redis (REDIS_URL): one synchronous client per process and one asyncio client
per event loop (an asyncio client cannot move between loops).

Their pools block: a burst that wants more than REDIS_POOL_MAX_CONNECTIONS connections waits up to
REDIS_POOL_TIMEOUT_SECONDS for one instead of failing at once (redis-py's plain pool raises
MaxConnectionsError past 100)."""

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


def pool_options() -> dict:
    return {
        "max_connections": settings.REDIS_POOL_MAX_CONNECTIONS,
        "timeout": settings.REDIS_POOL_TIMEOUT_SECONDS,
    }


@lru_cache(maxsize=1)
def sync_client() -> redis.Redis:
    pool = redis.BlockingConnectionPool.from_url(settings.REDIS_URL, **TIMEOUTS, **pool_options())
    return redis.Redis(connection_pool=pool)


def async_client() -> redis.asyncio.Redis:
    """The asyncio client of the running event loop."""
    loop = asyncio.get_running_loop()
    client = _async_clients.get(loop)
    if client is None:
        pool = redis.asyncio.BlockingConnectionPool.from_url(settings.REDIS_URL, **TIMEOUTS, **pool_options())
        client = _async_clients[loop] = redis.asyncio.Redis(connection_pool=pool)
    return client
