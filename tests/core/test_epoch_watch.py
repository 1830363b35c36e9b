"""Epochs pushed to every process (core/epoch_watch.py): a bump reaches another subscriber within a round
trip, a current push serves epochs with no Redis read, and a push that stops arriving is distrusted within
TRUST_SECONDS, after which every caller reads Redis again: a lost push costs speed, never freshness.

An EpochWatch of its own, with its own thread and Redis connections, stands for another process."""

import asyncio
import threading
import time

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from core import epoch_watch, epochs
from core.epoch_watch import TRUST_SECONDS, WATCH, EpochWatch
from core.epochs import EpochCache, epochs_async
from tests.conftest import unused_port
from tests.waiting import wait_for

CACHE = EpochCache("test-pushed")


@pytest.fixture
def elsewhere():
    """Another process's watch, already serving the pushed epoch of CACHE."""
    watch = EpochWatch()
    wait_for(lambda: watch.values([CACHE.key]), timeout=5, interval=0.01, what="a first snapshot")
    yield watch
    watch._stopping.set()


def test_a_bump_reaches_another_process_within_a_fraction_of_a_second(elsewhere):
    before = elsewhere.values([CACHE.key])

    CACHE.bump()
    bumped = time.monotonic()
    after = wait_for(
        lambda: elsewhere.values([CACHE.key]) != before and elsewhere.values([CACHE.key]),
        timeout=1,
        interval=0.001,
        what="the bump pushed",
    )

    assert time.monotonic() - bumped < 0.5
    assert after == [CACHE.epoch()]


def test_the_process_that_bumps_never_serves_the_old_epoch():
    wait_for(lambda: WATCH.values([CACHE.key]), timeout=5, interval=0.01, what="a first snapshot")
    old = CACHE.epoch()

    CACHE.bump()

    assert CACHE.epoch() != old  # at once: its own bump is read from Redis until pushed back


def test_a_current_push_costs_no_redis_read(monkeypatch):
    wait_for(lambda: WATCH.values([CACHE.key]), timeout=5, interval=0.01, what="a first snapshot")
    reads = []

    async def read(caches):
        reads.append(caches)
        return [None] * len(caches)

    monkeypatch.setattr(epochs, "_read_epochs", read)

    async def go():
        return [await epochs_async(CACHE) for _ in range(100)]

    answers = asyncio.run(go())

    assert reads == []
    assert answers == [[CACHE.epoch()]] * 100


def test_a_push_that_stops_arriving_is_distrusted_within_its_bound(elsewhere, monkeypatch):
    stalled = threading.Event()
    monkeypatch.setattr(elsewhere, "_receive", lambda message: stalled.wait(10))  # messages lost

    CACHE.bump()
    bumped = time.monotonic()
    wait_for(lambda: elsewhere.values([CACHE.key]) is None, timeout=2, interval=0.01, what="distrust")
    stalled.set()

    assert time.monotonic() - bumped <= TRUST_SECONDS + 0.1


def test_a_bump_that_failed_is_served_from_the_push_again_after_the_next_snapshot(monkeypatch):
    wait_for(lambda: WATCH.values([CACHE.key]), timeout=5, interval=0.01, what="a first snapshot")
    current = CACHE.epoch()
    with monkeypatch.context() as patched:  # Redis unreachable for this one bump
        unreachable = redis.Redis(port=unused_port(), retry=Retry(NoBackoff(), 0))
        patched.setattr(epoch_watch, "sync_client", lambda: unreachable)
        with pytest.raises(redis.ConnectionError):
            WATCH.bump(CACHE.key, b"never-stored")

    assert WATCH.values([CACHE.key]) is None  # it may have been applied: read until a snapshot says
    served = wait_for(lambda: WATCH.values([CACHE.key]), timeout=1, interval=0.01, what="trusted again")
    assert served == [current]
