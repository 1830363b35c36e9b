"""The registry's client of the metrics service: `emit()` queues one event and returns at once; a
background thread posts the queue in batches to `POST {METRICS_SERVICE_URL}/metrics`.

Why: a request must never wait for, or fail because of, the metrics service, so `emit` only puts a dict
in a bounded queue (when full, the metric is dropped and counted). Batches (`Options.batch_size` or
`flush_interval`) spare a round trip per event and the key's rate limit. A failing service gets a few
retries with backoff (429: its Retry-After, capped), then the batch is dropped with a WARNING giving the
running count; a 4xx other than 429 is not retried, since it would fail the same way. Celery's prefork
pool forks after import and a child inherits the queue but not the thread, so the first `emit` of each
process (os.getpid()) starts its own. Settings are read when used, so tests can point it elsewhere.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import queue
import threading
import time
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import requests
from celery.signals import worker_process_shutdown
from django.conf import settings

logger = logging.getLogger(__name__)

SERVICE = "registry"
EXIT_WAIT = 2.0  # how long process exit waits for queued metrics to be sent
WARN_EVERY = 10.0  # a full queue logs at most this often (every drop is still counted)
_STOP = object()


def user_hash(username: str) -> str:
    """Tells users apart without naming them: the first 16 hex digits of sha256(username)."""
    return hashlib.sha256(username.encode()).hexdigest()[:16]


@lru_cache(maxsize=1)
def registry_version() -> str:
    """The `version` of pyproject.toml, sent with every batch."""
    with open(Path(__file__).resolve().parent.parent / "pyproject.toml", "rb") as file:
        return str(tomllib.load(file)["project"]["version"])


def reporting_on() -> bool:
    """Whether this registry reports its metrics (the one rule: METRICS_API_KEY, or
    METRICS_API_KEY_REGISTRY, is set); pages that show usage say so when it is not."""
    return bool(settings.METRICS_API_KEY)


@dataclass(frozen=True)
class Options:
    batch_size: int = 50  # send as soon as this many metrics wait...
    flush_interval: float = 1.0  # ...or once the oldest waiting one is this many seconds old
    max_per_post: int = 1000  # the service's limit for one batch
    queue_size: int = 10_000  # seconds of a busy process; past it emits are dropped, never waited for
    attempts: int = 4  # one try and three retries
    backoff: float = 0.5  # seconds before the first retry, doubled before each next one
    retry_after_cap: float = 10.0  # the longest a 429's Retry-After makes the thread wait
    timeout: tuple[float, float] = (1.0, 5.0)  # connect, read: a slow service holds up only the thread


class MetricsClient:
    """A bounded queue, one sender thread per process, and two counters for tests and operators:
    `sent` (accepted by the service) and `dropped` (lost for any reason, each loss logged)."""

    def __init__(self, options: Options = Options()):
        self.options = options
        self._said_off = False
        self.after_fork()
        self._pid: int | None = None  # no thread yet: the first emit starts one

    def after_fork(self) -> None:
        """Fresh state for a new process: a forked child must not use its parent's queue or locks
        (another thread may have held them at the fork), and counts what it loses itself."""
        self.sent = self.dropped = self._logged_dropped = 0
        self._queue: queue.Queue = queue.Queue(self.options.queue_size)
        self._lock = threading.Lock()
        self._closing, self._done = threading.Event(), threading.Event()
        self._thread: threading.Thread | None = None
        self._in_flight = 0
        self._last_warning = float("-inf")

    def emit(self, type, *, value=1.0, duration_ms=None, dimensions: dict, metadata: dict | None = None):
        """Queue one metric for sending; never blocks and never raises."""
        try:
            if not reporting_on():
                if not self._said_off:
                    self._said_off = True
                    logger.info("Metrics reporting is off: METRICS_API_KEY is not set.")
                return
            if self._pid != os.getpid():
                self._start()
            if self._closing.is_set():
                return self._drop(1, "the client is closed", throttle=True)
            metric = {"type": str(type), "value": float(value), "timestamp": time.time()}
            if duration_ms is not None:
                metric["duration_ms"] = float(duration_ms)
            metric.update(dimensions=dimensions, metadata=metadata or {})
            self._queue.put_nowait(metric)
        except queue.Full:
            self._drop(1, f"the queue of {self.options.queue_size} is full", throttle=True)
        except Exception:  # a metric must never break the request that emits it
            logger.exception("Could not queue a metric.")
            self._drop(1, "emit failed", throttle=True)

    def _start(self) -> None:
        with self._lock:
            if self._pid == os.getpid():
                return
            if self._pid is not None:
                self.after_fork()  # the first emit in a child whose fork hook did not run
            self._pid = os.getpid()
            self._thread = threading.Thread(target=self._run, name="metrics-client", daemon=True)
            self._thread.start()

    def close(self, timeout: float = EXIT_WAIT) -> None:
        """Send what is queued, waiting at most `timeout` seconds; what is left then counts as dropped."""
        if self._pid != os.getpid() or self._thread is None or self._closing.is_set():
            return
        self._closing.set()
        try:
            self._queue.put_nowait(_STOP)
        except queue.Full:
            pass  # the thread is not waiting: it sees `_closing` before it would wait
        if not self._done.wait(timeout):
            left = sum(1 for item in list(self._queue.queue) if item is not _STOP) + self._in_flight
            self._drop(left, f"still unsent {timeout:g} s after close")
        elif self.dropped > self._logged_dropped:  # drops a throttled warning has not shown yet
            logger.warning("%d metric(s) were dropped by this process in all.", self.dropped)

    def _run(self) -> None:
        session = requests.Session()
        try:
            while True:
                batch, stop = self._next_batch()
                if batch:
                    self._in_flight = len(batch)
                    self._send(session, batch)
                    self._in_flight = 0
                if stop:
                    return
        except Exception:
            logger.exception("The metrics sender thread failed; metrics are no longer sent.")
        finally:
            session.close()
            self._done.set()

    def _next_batch(self) -> tuple[list[dict], bool]:
        """Wait for a first metric, then gather until batch_size or flush_interval, plus whatever else
        already waits (up to one POST). True once closing and nothing is left to gather."""
        batch: list[dict] = []
        deadline = float("inf")
        while len(batch) < self.options.max_per_post:
            wait = not self._closing.is_set() and len(batch) < self.options.batch_size
            try:
                if wait and batch:
                    item = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
                else:
                    item = self._queue.get(block=wait)
            except queue.Empty:
                return batch, self._closing.is_set()
            if item is _STOP:
                return batch, True
            if not batch:
                deadline = time.monotonic() + self.options.flush_interval
            batch.append(item)
        return batch, False

    def _send(self, session: requests.Session, batch: list[dict]) -> None:
        body = {"service": SERVICE, "version": registry_version(), "metrics": batch}
        url = f"{settings.METRICS_SERVICE_URL}/metrics"
        headers = {"X-API-Key": settings.METRICS_API_KEY}
        for attempt in range(self.options.attempts):
            delay = self.options.backoff * 2**attempt
            try:
                response = session.post(url, json=body, headers=headers, timeout=self.options.timeout)
            except requests.RequestException as exc:
                reason = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code < 300:
                    return self._accepted(batch, response)
                reason = f"HTTP {response.status_code}"
                if response.status_code == 429:
                    delay = min(
                        _seconds(response.headers.get("Retry-After"), delay), self.options.retry_after_cap
                    )
                elif response.status_code == 413 and len(batch) > 1:  # too large: send it in halves
                    self._send(session, batch[: len(batch) // 2])
                    return self._send(session, batch[len(batch) // 2 :])
                elif response.status_code < 500:  # the same batch would be refused again
                    return self._drop(len(batch), f"{reason}: {response.text[:500]}")
            if attempt + 1 < self.options.attempts and self._closing.wait(delay):
                break  # closing: no more waiting
        self._drop(len(batch), f"{reason}, after {attempt + 1} attempt(s) to {url}")

    def _accepted(self, batch: list[dict], response: requests.Response) -> None:
        try:
            answer = response.json()
            accepted = int(answer.get("accepted", len(batch)))
            errors = list(answer.get("errors") or [])[:5]
        except (ValueError, TypeError, AttributeError):
            accepted, errors = len(batch), []
        with self._lock:
            self.sent += accepted
        if accepted < len(batch):
            self._drop(len(batch) - accepted, f"rejected by the service: {errors}")

    def _drop(self, count: int, reason: str, *, throttle: bool = False) -> None:
        """Count lost metrics and say so; throttled losses show in the next warning's running total."""
        with self._lock:
            self.dropped += count
            total, now = self.dropped, time.monotonic()
            if throttle and now - self._last_warning < WARN_EVERY:
                return
            self._last_warning, self._logged_dropped = now, total
        logger.warning("Dropped %d metric(s) (%s); %d dropped by this process so far.", count, reason, total)


def _seconds(value: str | None, default: float) -> float:
    """A Retry-After in seconds; the rare HTTP-date form gets the default backoff instead."""
    return float(value) if value and value.strip().replace(".", "", 1).isdigit() else default


_client = MetricsClient()


def reset_client(**options) -> MetricsClient:
    """Close the process-wide client and put one with these `Options` in its place (tests, benchmarks)."""
    global _client
    _client.close(timeout=0)
    _client = MetricsClient(Options(**options))
    return _client


def emit(type, *, value=1.0, duration_ms=None, dimensions: dict, metadata: dict | None = None) -> None:
    """Report one event to the metrics service, later and in the background; never blocks or raises."""
    _client.emit(type, value=value, duration_ms=duration_ms, dimensions=dimensions, metadata=metadata)


def _close_at_exit(**_) -> None:
    _client.close()


atexit.register(_close_at_exit)
os.register_at_fork(after_in_child=lambda: _client.after_fork())
# Celery's pool children leave through os._exit, past atexit; this signal is sent just before.
worker_process_shutdown.connect(_close_at_exit, weak=False)
