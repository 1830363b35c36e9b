"""One pooled HTTP client per event loop for the gateway's upstream requests (an async client cannot move
between loops), with the pool size of the settings and the process's one TLS context; timeouts per request."""

from __future__ import annotations

import asyncio
import weakref

import httpx2
from django.conf import settings

from servers.health import tls_context

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx2.AsyncClient] = (
    weakref.WeakKeyDictionary()
)


def client() -> httpx2.AsyncClient:
    loop = asyncio.get_running_loop()
    found = _clients.get(loop)
    if found is None:
        found = _clients[loop] = httpx2.AsyncClient(
            limits=httpx2.Limits(
                max_connections=settings.GATEWAY_MAX_CONNECTIONS,
                max_keepalive_connections=settings.GATEWAY_MAX_CONNECTIONS,
            ),
            verify=tls_context(),
            follow_redirects=False,
        )
    return found


def timeout() -> httpx2.Timeout:
    """Read per request, so a change of settings applies to the next request."""
    return httpx2.Timeout(settings.GATEWAY_TIMEOUT_SECONDS, connect=settings.GATEWAY_CONNECT_TIMEOUT_SECONDS)
