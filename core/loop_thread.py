"""One event loop per process, in a daemon thread of its own, for the asynchronous clients that
synchronous code calls (the channel layer, from a Celery task or a Django view).

`async_to_sync` from such code makes a new event loop on every call, and channels-redis keeps its
connection pool per event loop: each health change published opened (and dropped) a Redis connection.
Coroutines submitted here run on one loop that lives as long as the process, so their clients keep their
connections. Made after a fork, never inherited (Celery's prefork children each get their own)."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from typing import Any

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_pid: int | None = None


def _process_loop() -> asyncio.AbstractEventLoop:
    global _loop, _pid
    with _lock:
        if _loop is None or _pid != os.getpid() or not _loop.is_running():
            loop = asyncio.new_event_loop()
            started = threading.Event()

            def serve() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(started.set)
                loop.run_forever()

            threading.Thread(target=serve, name="process-event-loop", daemon=True).start()
            started.wait(5)
            _loop, _pid = loop, os.getpid()
        return _loop


def run(coroutine: Coroutine[Any, Any, Any], *, timeout: float = 10.0) -> Any:
    """The result of `coroutine`, run on the process's loop; TimeoutError after `timeout` seconds (the
    coroutine is then cancelled)."""
    future = asyncio.run_coroutine_threadsafe(coroutine, _process_loop())
    try:
        return future.result(timeout)
    except TimeoutError:
        future.cancel()
        raise
