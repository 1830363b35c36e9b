"""Clients of the registry's Redis (REDIS_URL): one synchronous client per process and one asyncio client
per event loop (an asyncio client cannot move between loops)."""

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
    return redis.Redis.from_url(settings.REDIS_URL, **TIMEOUTS)


def async_client() -> redis.asyncio.Redis:
    """The asyncio client of the running event loop."""
    loop = asyncio.get_running_loop()
    client = _async_clients.get(loop)
    if client is None:
        client = _async_clients[loop] = redis.asyncio.Redis.from_url(settings.REDIS_URL, **TIMEOUTS)
    return client
