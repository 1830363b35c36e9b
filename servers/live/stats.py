"""Websocket statistics kept in Redis, so every web process adds to the same figures.

- Open connections: a sorted set of channel names scored by when each stops counting; a connection
  renews its score on every keep-alive and leaves the set on disconnect, so connections of a process that
  died without saying goodbye stop counting after `3 x HEALTH_WS_KEEPALIVE_SECONDS`.
- Messages sent: one counter.
- Uptime: since when some web process has been up without a gap; every web process renews the start
  mark on a heartbeat, and the mark expires when none is left.
"""

import asyncio
import atexit
import functools
import logging
import threading
import time

import redis
from django.conf import settings

from core.redis_clients import async_client, sync_client

logger = logging.getLogger(__name__)

CONNECTIONS = "registry:ws:connections"
MESSAGES = "registry:ws:messages"
STARTED = "registry:ws:started"


def _ttl() -> int:
    return 3 * settings.HEALTH_WS_KEEPALIVE_SECONDS


def _best_effort(counter):
    """Counting never breaks a socket: a Redis error is logged and the message still goes out."""

    @functools.wraps(counter)
    async def wrapper(*args, **kwargs):
        try:
            await counter(*args, **kwargs)
        except redis.RedisError:
            logger.warning("websocket statistics not updated (%s)", counter.__name__, exc_info=True)

    return wrapper


# Opening and closing go through the synchronous client, whose pool waits for a free connection, so a
# burst of handshakes or closes is counted exactly; a handshake that cannot be counted is refused (1013).


async def connection_opened(channel_name: str) -> None:
    """Count a new connection; raises when Redis cannot (the consumer then refuses the socket)."""
    await asyncio.to_thread(sync_client().zadd, CONNECTIONS, {channel_name: time.time() + _ttl()})


@_best_effort
async def connection_seen(channel_name: str) -> None:
    """Keep counting an open connection (each keep-alive): renews it only while it is counted, so a
    renewal still running in its thread when the socket closes cannot count the closed socket again."""
    await asyncio.to_thread(sync_client().zadd, CONNECTIONS, {channel_name: time.time() + _ttl()}, xx=True)


@_best_effort
async def connection_closed(channel_name: str) -> None:
    await asyncio.to_thread(sync_client().zrem, CONNECTIONS, channel_name)


@_best_effort
async def messages_sent(count: int = 1) -> None:
    await async_client().incrby(MESSAGES, count)


def heartbeat() -> None:
    """Mark this web process as up: sets the start mark when no process was up, renews it otherwise."""
    client = sync_client()
    pipe = client.pipeline()
    pipe.set(STARTED, f"{time.time():.3f}", nx=True)
    pipe.expire(STARTED, _ttl())
    pipe.execute()


def heartbeat_forever() -> None:
    """Start the heartbeat of this web process in a daemon thread. It stops when the process exits,
    before the exit handlers that stop an embedded Redis run (they were registered earlier)."""
    stopping = threading.Event()
    atexit.register(stopping.set)

    def beat() -> None:
        while not stopping.is_set():
            try:
                heartbeat()
            except Exception:  # Redis away for a moment; the next beat renews the mark
                if not stopping.is_set():
                    logger.warning("websocket heartbeat failed", exc_info=True)
            stopping.wait(settings.HEALTH_WS_KEEPALIVE_SECONDS)

    threading.Thread(target=beat, name="ws-heartbeat", daemon=True).start()


def stats() -> dict:
    """`{active_connections, total_messages_sent, uptime_seconds}` over every web process."""
    client = sync_client()
    now = time.time()
    pipe = client.pipeline()
    pipe.zremrangebyscore(CONNECTIONS, "-inf", now)
    pipe.zcard(CONNECTIONS)
    pipe.get(MESSAGES)
    pipe.get(STARTED)
    _, active, sent, started = pipe.execute()
    return {
        "active_connections": int(active),
        "total_messages_sent": int(sent or 0),
        "uptime_seconds": max(0, int(now - float(started))) if started else 0,
    }
