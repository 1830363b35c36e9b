"""EpochCache.get_or_build: one build at a time per key and process; requests that arrive during a
rebuild get the value it replaces; values that are not kept are built by each request, without waiting."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from core.epochs import EpochCache

pytestmark = pytest.mark.django_db  # bump() consults the connection's transaction


class SlowBuild:
    """A build that takes `seconds` and counts how often it ran and how many ran at once."""

    def __init__(self, value, seconds=0.3):
        self.value, self.seconds = value, seconds
        self.calls = self.running = self.most_at_once = 0
        self.started = threading.Event()
        self._lock = threading.Lock()

    def __call__(self):
        with self._lock:
            self.calls += 1
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        self.started.set()
        time.sleep(self.seconds)
        with self._lock:
            self.running -= 1
        return self.value


def test_concurrent_requests_for_a_missing_value_share_one_build():
    cache = EpochCache("test-build-once")
    cache.bump()
    build = SlowBuild("page")

    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda _: cache.get_or_build("k", build, ttl_seconds=60), range(6)))

    assert answers == ["page"] * 6
    assert build.calls == 1


def test_during_a_rebuild_other_requests_get_the_value_it_replaces_then_the_new_one():
    cache = EpochCache("test-build-stale")
    cache.bump()
    assert cache.get_or_build("k", lambda: "old", ttl_seconds=60) == "old"
    cache.bump()  # a server changed
    rebuild = SlowBuild("new", seconds=0.5)

    with ThreadPoolExecutor(1) as pool:
        builder = pool.submit(cache.get_or_build, "k", rebuild, ttl_seconds=60)
        rebuild.started.wait(5)
        during = [cache.get_or_build("k", SlowBuild("unused"), ttl_seconds=60) for _ in range(3)]
        built = builder.result()

    assert during == ["old", "old", "old"]
    assert built == "new"
    assert cache.get_or_build("k", SlowBuild("unused"), ttl_seconds=60) == "new"
    assert rebuild.calls == 1


def test_a_value_that_is_not_kept_is_built_by_each_request_at_once():
    cache = EpochCache("test-build-unkept")
    cache.bump()
    build = SlowBuild("huge page")

    assert cache.get_or_build("k", build, ttl_seconds=60, keep=lambda value: False) == "huge page"
    with ThreadPoolExecutor(4) as pool:
        answers = list(
            pool.map(lambda _: cache.get_or_build("k", build, ttl_seconds=60, keep=lambda v: False), range(4))
        )

    assert answers == ["huge page"] * 4
    assert build.calls == 5
    assert build.most_at_once == 4


def test_an_expired_value_is_rebuilt():
    cache = EpochCache("test-build-expired")
    cache.bump()
    cache.get_or_build("k", lambda: "first", ttl_seconds=-1)  # expires as it is stored

    assert cache.get_or_build("k", lambda: "second", ttl_seconds=60) == "second"
