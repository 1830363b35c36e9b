"""Concurrent epoch reads on one event loop share Redis round trips, and never at the cost of freshness:
every caller is answered by a read that was sent after it asked."""

import asyncio

import pytest

from core import epochs
from core.epochs import EpochCache, epochs_async

CACHES = (EpochCache("test-shared-a"), EpochCache("test-shared-b"))


@pytest.fixture
def counted_reads(monkeypatch):
    """Each read answers with its own number, after a pause in which more callers can ask. The pushed
    epochs are not current (core/epoch_watch.py), so every caller reads."""
    reads: list[int] = []
    monkeypatch.setattr(epochs.WATCH, "values", lambda keys: None)

    async def read(caches):
        reads.append(len(reads) + 1)
        number = len(reads)
        await asyncio.sleep(0.05)
        return [str(number).encode()] * len(caches)

    monkeypatch.setattr(epochs, "_read_epochs", read)
    return reads


def test_sixteen_callers_at_once_share_two_reads(counted_reads):
    async def go():
        return await asyncio.gather(*(epochs_async(*CACHES) for _ in range(16)))

    answers = asyncio.run(go())

    assert counted_reads == [1, 2]  # the first caller reads at once; the others asked during it
    assert answers == [[b"1", b"1"]] + [[b"2", b"2"]] * 15


def test_a_caller_alone_reads_once(counted_reads):
    async def go():
        return [await epochs_async(*CACHES) for _ in range(3)]

    assert asyncio.run(go()) == [[b"1", b"1"], [b"2", b"2"], [b"3", b"3"]]


def test_a_caller_arriving_during_a_read_gets_the_next_one(counted_reads):
    async def go():
        first = asyncio.create_task(epochs_async(*CACHES))
        await asyncio.sleep(0.01)  # the first read is under way
        late = await asyncio.gather(*(epochs_async(*CACHES) for _ in range(3)))
        return await first, late

    first, late = asyncio.run(go())

    assert first == [b"1", b"1"]
    assert late == [[b"2", b"2"]] * 3
    assert counted_reads == [1, 2]


def test_real_redis_answers_every_caller():
    async def go():
        return await asyncio.gather(*(epochs_async(*CACHES) for _ in range(8)))

    answers = asyncio.run(go())

    assert len({tuple(answer) for answer in answers}) == 1
    assert all(value is not None and len(value) == 16 for value in answers[0])
