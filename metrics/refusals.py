"""Calls the gateway refused by a limit or a quarantine, over time, for the operators' metrics page: one
Redis hash per hour of the clock whose fields count each minute's refusals by reason and target
(`minute|reason|target`), kept as long as the page's longest window. The gateway adds to it where it
refuses, in the same round trip as the exported counter (metrics/aggregates.refusal_counted); nothing
is written for an allowed call."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import redis

from metrics.aggregates import OTHER, REFUSAL_REASONS
from metrics.plots import BUCKETS, WINDOWS_HOURS, Window

KEY_PREFIX = "registry:metrics:refusals:"
KEPT_SECONDS = (max(WINDOWS_HOURS) + 1) * 3600
TOP_TARGETS = 8


def timeline_field(target: str, reason: str, at: float) -> tuple[str, str]:
    """(hash key, field) one refusal at `at` (seconds since the epoch) adds 1 to."""
    hour, second = divmod(int(at), 3600)
    reason = reason if reason in REFUSAL_REASONS else OTHER
    return f"{KEY_PREFIX}{hour}", f"{second // 60}|{reason}|{target[:200]}"


@dataclass
class RefusalSeries:
    """One target's refusals: totals by reason and, per reason, one count per bucket (oldest first)."""

    name: str
    totals: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REFUSAL_REASONS, 0))
    per_bucket: dict[str, list[int]] = field(
        default_factory=lambda: {reason: [0] * BUCKETS for reason in REFUSAL_REASONS}
    )

    @property
    def total(self) -> int:
        return sum(self.totals.values())


def refusal_series(client: redis.Redis, win: Window) -> list[RefusalSeries]:
    """The targets with the most refusals in `win` (at most TOP_TARGETS), most refused first."""
    start, bucket = win.start.timestamp(), win.bucket.total_seconds()
    end = start + bucket * BUCKETS
    hours = range(int(start) // 3600, math.floor(end) // 3600 + 1)
    pipe = client.pipeline(transaction=False)
    for hour in hours:
        pipe.hgetall(f"{KEY_PREFIX}{hour}")
    found: dict[str, RefusalSeries] = defaultdict(lambda: RefusalSeries(""))
    for hour, counts in zip(hours, pipe.execute(), strict=True):
        for raw, count in counts.items():
            minute, reason, target = raw.decode().split("|", 2)
            at = hour * 3600 + int(minute) * 60
            if not start - 60 < at < end or reason not in REFUSAL_REASONS:
                continue
            index = min(BUCKETS - 1, max(0, int((at - start) // bucket)))
            series = found[target]
            series.name = target
            series.totals[reason] += int(count)
            series.per_bucket[reason][index] += int(count)
    ranked = sorted(found.values(), key=lambda series: (-series.total, series.name))
    return ranked[:TOP_TARGETS]
