"""Clients of the registry's Redis (REDIS_URL: one server, or the master its Sentinels name; see
core/redis_url.py): one synchronous client per process and one asyncio client per event loop (an
asyncio client cannot move between loops). The Django cache shares the synchronous client's connections.

The synchronous pool blocks: a thread that finds REDIS_POOL_MAX_CONNECTIONS connections busy waits up to
REDIS_POOL_TIMEOUT_SECONDS for one instead of failing at once. The asyncio pools (this client's and the
channel layer's) hold up to REDIS_POOL_MAX_CONNECTIONS each and raise MaxConnectionsError beyond, which
the websocket consumers answer with a 1013 close (an asyncio blocking pool could not be cancelled cleanly
when its event loop closed). Behind Sentinel the synchronous pool cannot block (redis-py has no blocking
Sentinel pool): beyond its connections a caller gets an error, answered 503 (core/outages.py)."""

import asyncio
import weakref
from functools import lru_cache

import redis
import redis.asyncio
import redis.asyncio.sentinel
import redis.sentinel
from django.conf import settings

from core import redis_pipe, redis_url
from core.redis_url import RedisTarget

TIMEOUTS = {"socket_timeout": 5, "socket_connect_timeout": 5}

_async_clients: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, redis.asyncio.Redis]" = (
    weakref.WeakKeyDictionary()
)


def target() -> RedisTarget:
    return _target(settings.REDIS_URL, settings.REDIS_SENTINEL_MASTER, settings.REDIS_SENTINEL_PASSWORD)


@lru_cache(maxsize=4)
def _target(url: str, master_name: str, sentinel_password: str) -> RedisTarget:
    return redis_url.parse(url, master_name=master_name, sentinel_password=sentinel_password)


def pipe() -> redis_pipe.Pipe:
    """The running event loop's pipelined connection, for the gateway's hot commands (core/redis_pipe.py)."""
    return redis_pipe.pipe(target())


@lru_cache(maxsize=1)
def sync_client() -> redis.Redis:
    where = target()
    if where.uses_sentinel:
        sentinel = redis.sentinel.Sentinel(
            where.sentinels, sentinel_kwargs=where.sentinel_kwargs(), **TIMEOUTS
        )
        return sentinel.master_for(
            where.master_name,
            max_connections=settings.REDIS_POOL_MAX_CONNECTIONS,
            **where.connection_kwargs(),
        )
    pool = redis.BlockingConnectionPool.from_url(
        where.url,
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
        client = _async_clients[loop] = _async_client_new(target())
    return client


def _async_client_new(where: RedisTarget) -> redis.asyncio.Redis:
    if where.uses_sentinel:
        sentinel = redis.asyncio.sentinel.Sentinel(
            where.sentinels, sentinel_kwargs=where.sentinel_kwargs(), **TIMEOUTS
        )
        return sentinel.master_for(
            where.master_name,
            max_connections=settings.REDIS_POOL_MAX_CONNECTIONS,
            **where.connection_kwargs(),
        )
    return redis.asyncio.Redis.from_url(
        where.url, max_connections=settings.REDIS_POOL_MAX_CONNECTIONS, **TIMEOUTS
    )
