"""One pooled HTTP client per event loop for the gateway's upstream requests (a client cannot move between
loops): aiohttp, whose C parser keeps the gateway's own cost per call small. No pool limit (the shares of
gateway/fair_share.py bound it), the process's one TLS context, no cookie jar (a server's cookies must never
reach another caller), and timeouts read per request so a change of settings applies to the next one."""

from __future__ import annotations

import asyncio
import weakref

import aiohttp
from django.conf import settings

from servers.health import tls_context

_sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple] = weakref.WeakKeyDictionary()
# What a failed exchange raises: answered 504 when it is a timeout, 502 otherwise.
ERRORS = (aiohttp.ClientError, asyncio.TimeoutError)


def session() -> aiohttp.ClientSession:
    loop = asyncio.get_running_loop()
    found = _sessions.get(loop)
    if found is None or found[0].closed:
        # No pool limit: shares per caller and per origin bound the exchanges (gateway/fair_share.py), so
        # nobody's request waits for a connection behind another caller's streams.
        connector = aiohttp.TCPConnector(limit=0, ssl=tls_context())
        client = aiohttp.ClientSession(
            connector=connector, cookie_jar=aiohttp.DummyCookieJar(), skip_auto_headers=("User-Agent",)
        )
        keeper = _closed_with_loop(client)
        found = _sessions[loop] = (client, keeper, loop.create_task(anext(keeper)))
    return found[0]


async def _closed_with_loop(client: aiohttp.ClientSession):
    """Suspended for the loop's life; the loop's shutdown (asyncio.run, uvicorn) closes async generators
    before it ends, which closes the pool with it."""
    try:
        yield
    finally:
        await client.close()


def timeout() -> aiohttp.ClientTimeout:
    """Connecting is bounded by GATEWAY_CONNECT_TIMEOUT_SECONDS, waiting for a pooled connection and each
    read of the answer by GATEWAY_TIMEOUT_SECONDS; a long stream lives as long as it keeps talking."""
    return aiohttp.ClientTimeout(
        total=None,
        connect=settings.GATEWAY_TIMEOUT_SECONDS,
        sock_connect=settings.GATEWAY_CONNECT_TIMEOUT_SECONDS,
        sock_read=settings.GATEWAY_TIMEOUT_SECONDS,
    )


def is_timeout(error: BaseException) -> bool:
    return isinstance(error, asyncio.TimeoutError | aiohttp.ServerTimeoutError)


async def read_bounded(response, limit: int) -> bytes | None:
    """The whole answer, to its end however it arrives, or None when it is longer than `limit` (the rest
    is not read)."""
    body = bytearray()
    async for chunk in response.content.iter_any():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)
