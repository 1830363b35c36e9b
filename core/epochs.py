"""Per-process caches that every process drops at once: each cache has an epoch, a random token in Redis
that any write of what it holds replaces (again after the write commits). An entry is used only while the
epoch it was stored under is still current, so a revoked token or a disabled server is refused by every
process on the next request, and reading one Redis key replaces the database queries the entry saves.

In the steady state the epochs are not read from Redis at all: they are pushed to every process
(core/epoch_watch.py), which serves them only while the push is proven current (within TRUST_SECONDS).

Without Redis nothing is cached (the epoch is unknown), so an outage costs speed, never correctness. Epochs
are random, never counters: a Redis that lost its data starts a new epoch no old entry can match.
Entries also expire after EPOCH_CACHE_TTL_SECONDS whatever the epoch says, a bound should a bump be lost.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from django.db import transaction

from core.epoch_watch import WATCH
from core.redis_clients import async_client, sync_client

logger = logging.getLogger(__name__)

EPOCH_CACHE_TTL_SECONDS = 300.0
MISSING = object()
UNKEPT = object()  # get_or_build: the value of this key is not kept (too large, say); build it each time


class EpochCache:
    def __init__(self, name: str, *, max_entries: int = 10_000):
        self.key = f"registry:epoch:{name}"
        self.max_entries = max_entries
        self._entries: OrderedDict[Any, tuple[bytes, float, Any]] = OrderedDict()
        self._lock = threading.Lock()  # web processes resolve in threads and on the event loop
        self._building: dict[Any, threading.Lock] = {}  # keys being built now (get_or_build)

    # The epoch -----------------------------------------------------------------------------------

    def epoch(self) -> bytes | None:
        pushed = WATCH.values([self.key])
        if pushed is not None:
            return pushed[0]
        try:
            client = sync_client()
            found = client.get(self.key)
            if found is None:
                client.set(self.key, _new_epoch(), nx=True)
                found = client.get(self.key)
            return found
        except Exception:  # noqa: BLE001 - no Redis: no caching
            logger.warning("Cannot read %s; serving without the cache.", self.key)
            return None

    def bump(self) -> None:
        """Invalidate every process's entries now and again once the current transaction commits: a request
        that read the old rows between the two cannot keep its entry past the commit."""
        self._bump_now()
        if transaction.get_connection().in_atomic_block:
            transaction.on_commit(self._bump_now)

    def _bump_now(self) -> None:
        # Entries of older epochs stay until replaced (get() never returns them; get_or_build may while it
        # rebuilds them).
        try:
            WATCH.bump(self.key, _new_epoch())
        except Exception:  # noqa: BLE001 - other processes keep entries until EPOCH_CACHE_TTL_SECONDS
            logger.exception(
                "Cannot bump %s; other processes may serve cached entries for a while.", self.key
            )

    # Entries -------------------------------------------------------------------------------------

    def get(self, key, epoch: bytes | None):
        """The value stored under `key` in this epoch and not expired, else MISSING."""
        if epoch is None:
            return MISSING
        entry = self._entries.get(key)
        if entry is None:
            return MISSING
        stored_epoch, expires_at, value = entry
        if stored_epoch != epoch or expires_at <= time.time():
            return MISSING  # kept until replaced: `get_or_build` may still serve it while rebuilding
        return value

    def get_or_build(
        self, key, build: Callable[[], Any], *, ttl_seconds: float, keep: Callable[[Any], bool] | None = None
    ):
        """The current value of `key`, built by `build()` when there is none, one build at a time per key
        in this process. While a thread builds it, other threads asking for the same key get the value it
        replaces, when there is one (a request that started during the rebuild cannot tell the two apart;
        the next request after it gets the new value), and wait for the build otherwise. A value is kept
        for `ttl_seconds` at most, and only when `keep(value)` says so. The replaced value may have
        expired: use this for listings, never for anything whose expiry is a rule (credentials)."""
        epoch = self.epoch()
        value = self.get(key, epoch)
        if value is MISSING and epoch is None or value is UNKEPT:
            return build()
        if value is not MISSING:
            return value
        with self._lock:
            building = self._building.setdefault(key, threading.Lock())
        if not building.acquire(blocking=False):
            entry = self._entries.get(key)
            if entry is not None and entry[2] is not UNKEPT:
                return entry[2]
            building.acquire()
        try:
            value = self.get(key, epoch)  # built by the thread that held the lock
            if value is UNKEPT or value is MISSING:
                value = build()
                kept = keep is None or keep(value)  # else remember not to wait for builds of this key
                self.put(key, value if kept else UNKEPT, epoch, expires_at=time.time() + ttl_seconds)
            return value
        finally:
            building.release()
            with self._lock:
                self._building.pop(key, None)

    def put(self, key, value, epoch: bytes | None, *, expires_at: float | None = None) -> None:
        if epoch is None:
            return
        ttl_end = time.time() + EPOCH_CACHE_TTL_SECONDS
        with self._lock:
            self._entries[key] = (epoch, min(ttl_end, expires_at) if expires_at else ttl_end, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def _new_epoch() -> bytes:
    return secrets.token_hex(8).encode()


async def epochs_async(*caches: EpochCache) -> list[bytes | None]:
    """The epochs of several caches in one Redis round trip (None for each when Redis cannot answer).

    Concurrent callers on one event loop share reads: a caller gets the answer of a read that was sent
    after it asked (never one already under way), so it sees every bump that committed before it asked,
    while sixteen callers at once cost one or two round trips instead of sixteen."""
    keys = tuple(cache.key for cache in caches)
    pushed = WATCH.values(list(keys))
    if pushed is not None:
        return pushed
    loop = asyncio.get_running_loop()
    readers = _readers.setdefault(loop, {})
    reader = readers.get(keys)
    if reader is None:
        reader = readers[keys] = _SharedRead(caches)
    return await reader.read(loop)


_readers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict] = weakref.WeakKeyDictionary()


class _SharedRead:
    """Reads of the same epochs on one event loop, each serving every caller that asked before it began."""

    def __init__(self, caches: tuple[EpochCache, ...]):
        self.caches = caches
        self.waiting: list[asyncio.Future] = []
        self.running = False

    async def read(self, loop: asyncio.AbstractEventLoop) -> list[bytes | None]:
        if self.running:  # a read is under way: wait for the next one, sent after this caller asked
            answer = loop.create_future()
            self.waiting.append(answer)
            return await answer
        self.running = True  # none: this caller reads itself (no task hop when it is alone)
        try:
            return await _read_epochs(self.caches)
        finally:
            if self.waiting:
                loop.create_task(self._drain())  # those who asked meanwhile share the next read
            else:
                self.running = False

    async def _drain(self) -> None:
        batch: list[asyncio.Future] = []
        try:
            while self.waiting:
                batch, self.waiting = self.waiting, []  # everyone here asked before this read is sent
                values = await _read_epochs(self.caches)
                for answer in batch:
                    if not answer.done():
                        answer.set_result(values)
        finally:
            self.running = False
            for answer in [*batch, *self.waiting]:  # cancelled mid-read: serve them without the caches
                if not answer.done():
                    answer.set_result([None] * len(self.caches))
            self.waiting = []


async def _read_epochs(caches) -> list[bytes | None]:
    try:
        client = async_client()
        values = await client.mget([cache.key for cache in caches])
        if None in values:  # a fresh Redis: start the missing epochs
            for cache, value in zip(caches, values, strict=True):
                if value is None:
                    await client.set(cache.key, _new_epoch(), nx=True)
            values = await client.mget([cache.key for cache in caches])
    except Exception:  # noqa: BLE001
        logger.warning("Cannot read the cache epochs; serving without the caches.")
        return [None] * len(caches)
    return values
