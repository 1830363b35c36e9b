"""The refusals' timeline (metrics/refusals.py) in the registry's Redis: each refusal lands in the bucket
of its minute, refusals outside the window are left out, and the most refused targets come first."""

from datetime import UTC, datetime

from core.redis_clients import sync_client
from metrics.plots import BUCKETS, window
from metrics.refusals import refusal_series, timeline_field

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)  # a 6-hour window: 36 buckets of 10 minutes


def refused(target: str, reason: str, minutes_ago: float, times: int = 1) -> None:
    key, field = timeline_field(target, reason, NOW.timestamp() - minutes_ago * 60)
    sync_client().hincrby(key, field, times)


def test_each_refusal_is_counted_in_its_minutes_bucket_and_only_within_the_window():
    refused("/pay", "rate_limited", 5, times=3)  # the last bucket
    refused("/pay", "rate_limited", 355)  # the first
    refused("/pay", "quarantined", 125)  # 235 minutes into the window: bucket 23
    refused("/pay", "rate_limited", 60 * 7)  # before the window
    refused("/search", "limits_unavailable", 30)
    refused("/search", "no such reason", 30)

    found = refusal_series(sync_client(), window(6, NOW))

    assert [(series.name, series.totals) for series in found] == [
        ("/pay", {"rate_limited": 4, "limits_unavailable": 0, "quarantined": 1}),
        ("/search", {"rate_limited": 0, "limits_unavailable": 1, "quarantined": 0}),
    ]
    pay = found[0].per_bucket
    assert (pay["rate_limited"][0], pay["rate_limited"][BUCKETS - 1], sum(pay["rate_limited"])) == (1, 3, 4)
    assert pay["quarantined"].index(1) == 23
