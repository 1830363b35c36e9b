"""Steady traffic through the balancer while a fault is injected, every answer recorded with its time,
so a test can say which requests failed, how, and for how long (the failover window)."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass

import requests

from tests.multihost.system import METRICS_SERVICE


@dataclass(frozen=True)
class Outcome:
    at: float  # when the answer (or the error) came
    kind: str
    status: int  # 0: no HTTP answer (connection refused or reset, timeout)
    error: str = ""
    sent: float = 0.0  # when the request was sent

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


class Load:
    """`threads` clients, each alternating a /v0.1 listing and a metrics batch of one metric marked with
    this load's `run` id; `accepted` counts the metrics answered 202. Like a careful sender, a client
    sends a batch that was not answered 202 again, metric ids unchanged (docs/metrics.md)."""

    # Each client waits `pause` after each round (listing and batch): about 25 requests a second in all,
    # one every 40 ms or so across the four clients, far more than a failover window (bounded in seconds)
    # needs to be seen. At 0.05 s (111 a second) the traffic alone took 0.8 of the machine's two cores for
    # the three minutes the failover tests run it; at 0.2 s (36 a second) 0.4.
    def __init__(self, system, *, threads: int = 4, pause: float = 0.3):
        self.system = system
        self.run = uuid.uuid4().hex
        self.threads = threads
        self.pause = pause
        self.outcomes: list[Outcome] = []
        self.accepted = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._workers: list[threading.Thread] = []
        self.auth = system.auth()  # fetched before any fault

    def __enter__(self) -> Load:
        for index in range(self.threads):
            worker = threading.Thread(target=self._loop, name=f"load-{index}", daemon=True)
            worker.start()
            self._workers.append(worker)
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        for worker in self._workers:
            worker.join(30)

    def _loop(self) -> None:
        session = requests.Session()
        session.headers.update(self.auth)
        listing = f"{self.system.url}/v0.1/servers?limit=5"
        metrics = f"{self.system.metrics_url}/metrics"
        headers = {"X-API-Key": self.system.metrics_key}
        pending = None  # the batch not yet answered 202, sent again with the same metric id
        finish_by = None
        while pending is not None or not self._stop.is_set():
            if self._stop.is_set():  # only the batch being sent again, for a bounded while
                finish_by = finish_by or time.monotonic() + 30
                if time.monotonic() > finish_by:
                    return
            else:
                self._record("listing", lambda: session.get(listing, timeout=10))
            pending = pending or {
                "service": METRICS_SERVICE,
                "metrics": [
                    {"id": str(uuid.uuid4()), "type": "custom", "value": 1, "dimensions": {"run": self.run}}
                ],
            }
            send = lambda batch=pending: session.post(  # noqa: E731
                metrics, json=batch, headers=headers, timeout=10
            )
            answer = self._record("metrics", send)
            if answer is not None and answer.status_code == 202:
                with self._lock:
                    self.accepted += answer.json()["accepted"]
                pending = None
            time.sleep(self.pause)

    def _record(self, kind: str, call):
        sent = time.monotonic()
        try:
            answer = call()
        except requests.RequestException as exc:
            self._add(Outcome(time.monotonic(), kind, 0, exc.__class__.__name__, sent))
            return None
        said = answer.text[:200] if answer.status_code >= 300 else ""
        self._add(Outcome(time.monotonic(), kind, answer.status_code, said, sent))
        return answer

    def _add(self, outcome: Outcome) -> None:
        with self._lock:
            self.outcomes.append(outcome)

    # -- what happened -------------------------------------------------------------------------------

    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.ok]

    def failures_sent_after(self, moment: float) -> list[Outcome]:
        """Requests sent after `moment` that failed (one sent during a fault may end after it, when its
        client gives up: it belongs to the fault's window, which `window` measures to its end)."""
        return [o for o in self.failures() if o.sent >= moment]

    def statuses(self) -> set[int]:
        return {o.status for o in self.outcomes}

    def window(self, since: float) -> float:
        """Seconds from `since` to the last failure after it (0: none failed)."""
        failed = [o.at for o in self.failures() if o.at >= since]
        return max(failed) - since if failed else 0.0

    def succeeded_after(self, moment: float) -> int:
        return sum(1 for o in self.outcomes if o.at > moment and o.ok)

    def stored(self) -> int:
        return int(
            self.system.sql(
                f"SELECT count(*) FROM metrics_genericmetric WHERE dimensions->>'run' = '{self.run}'"
            )
        )
