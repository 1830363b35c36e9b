"""Reads for the operators' metrics page: requests, errors and latency per server and per tool over the
last hours, from the stored `tool_execution` rows (one row per MCP call through the gateway), bucketed
and aggregated by PostgreSQL."""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Aggregate, Avg, Count, FloatField, IntegerField, Q
from django.db.models.expressions import RawSQL
from django.db.models.fields.json import KT
from django.utils import timezone

from metrics.models import ToolExecutionMetric

BUCKETS = 36  # points on each plot
TOP_SERVERS = 8
TOP_TOOLS = 20
WINDOWS_HOURS = (1, 6, 24, 72)
DEFAULT_HOURS = 6


class Percentile(Aggregate):
    """PostgreSQL's percentile_cont(fraction) WITHIN GROUP (ORDER BY expression)."""

    function = "percentile_cont"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()

    def __init__(self, expression, fraction: float, **extra):
        super().__init__(expression, fraction=float(fraction), **extra)


# A failed call: a JSON-RPC error (success false), or a tool's own error (a result with `isError`, which the
# gateway reports as error_type `tool_error`: gateway/telemetry.py), which a client sees as a failure too.
FAILED = Q(success=False) | Q(dimensions__error_type="tool_error")


@dataclass
class Series:
    """One server's or tool's numbers: totals and one value per bucket (oldest first)."""

    name: str
    requests: int = 0
    errors: int = 0
    p50_ms: float | None = None
    p95_ms: float | None = None
    requests_per_bucket: list[int] = field(default_factory=lambda: [0] * BUCKETS)
    errors_per_bucket: list[int] = field(default_factory=lambda: [0] * BUCKETS)
    latency_per_bucket: list[float | None] = field(default_factory=lambda: [None] * BUCKETS)

    @property
    def error_rate(self) -> float:
        return self.errors / self.requests if self.requests else 0.0


@dataclass(frozen=True)
class Window:
    hours: int
    start: datetime
    bucket: timedelta

    def bucket_start(self, index: int) -> datetime:
        return self.start + index * self.bucket


def window(hours: int, now: datetime | None = None) -> Window:
    now = now or timezone.now()
    return Window(hours=hours, start=now - timedelta(hours=hours), bucket=timedelta(hours=hours) / BUCKETS)


def _rows(win: Window):
    return ToolExecutionMetric.objects.filter(timestamp__gte=win.start).annotate(
        server_path=KT("dimensions__server")
    )


def _bucket_index(win: Window):
    seconds = win.bucket.total_seconds()
    return RawSQL(
        "LEAST(%s, FLOOR(EXTRACT(EPOCH FROM (timestamp - %s)) / %s))::int",
        (BUCKETS - 1, win.start, seconds),
        output_field=IntegerField(),
    )


def _series(win: Window, key: str, names: list[str]) -> dict[str, Series]:
    """Totals and per-bucket numbers of the rows whose `key` is one of `names`."""
    rows = _rows(win).filter(**{f"{key}__in": names})
    errors = Count("id", filter=FAILED)
    series = {name: Series(name) for name in names}
    for total in rows.values(key).annotate(
        requests=Count("id"),
        errors=errors,
        p50=Percentile("duration_ms", 0.5),
        p95=Percentile("duration_ms", 0.95),
    ):
        one = series[total[key]]
        one.requests, one.errors, one.p50_ms, one.p95_ms = (
            total["requests"],
            total["errors"],
            total["p50"],
            total["p95"],
        )
    per_bucket = (
        rows.annotate(bucket=_bucket_index(win))
        .values(key, "bucket")
        .annotate(requests=Count("id"), errors=errors, latency=Avg("duration_ms"))
    )
    for point in per_bucket:
        one, index = series[point[key]], point["bucket"]
        one.requests_per_bucket[index] = point["requests"]
        one.errors_per_bucket[index] = point["errors"]
        one.latency_per_bucket[index] = point["latency"]
    return series


def _busiest(win: Window, key: str, limit: int) -> list[str]:
    return list(
        _rows(win)
        .exclude(**{f"{key}__isnull": True})
        .exclude(**{key: ""})
        .values_list(key, flat=True)
        .annotate(n=Count("id"))
        .order_by("-n", key)[:limit]
    )


def metric_plots(hours: int = DEFAULT_HOURS, now: datetime | None = None) -> dict:
    """The busiest servers and tools of the last `hours`, with their series."""
    win = window(hours, now)
    servers = _series(win, "server_path", _busiest(win, "server_path", TOP_SERVERS))
    tools = _series(win, "tool_name", _busiest(win, "tool_name", TOP_TOOLS))
    return {
        "window": win,
        "servers": sorted(servers.values(), key=lambda s: (-s.requests, s.name)),
        "tools": sorted(tools.values(), key=lambda s: (-s.requests, s.name)),
    }


def server_tool_usage(server_path: str, hours: int = 24, now: datetime | None = None) -> list[Series]:
    """Calls, errors and latency of each tool of one server over the last `hours`, busiest first."""
    return tools_usage([server_path], hours, now).get(server_path, [])


def tools_usage(server_paths, hours: int = 24, now: datetime | None = None) -> dict[str, list[Series]]:
    """Calls, errors and latency of each tool at each of `server_paths` over the last `hours`, busiest
    first, in one query."""
    return _usage_by(server_paths, "tool_name", hours, now)


def method_usage(server_paths, hours: int = 24, now: datetime | None = None) -> dict[str, list[Series]]:
    """Calls, errors and latency of each method family at each of `server_paths` (an agent's A2A calls:
    gateway/a2a/metrics.py) over the last `hours`, busiest first, in one query."""
    return _usage_by(server_paths, "method", hours, now)


def _usage_by(server_paths, key: str, hours: int, now: datetime | None) -> dict[str, list[Series]]:
    """Per server path, the totals of each value of `key` (rows without one left out), busiest first."""
    rows = _rows(window(hours, now)).filter(server_path__in=list(server_paths)).exclude(**{key: ""})
    totals = (
        rows.values("server_path", key)
        .annotate(
            requests=Count("id"),
            errors=Count("id", filter=FAILED),
            p50=Percentile("duration_ms", 0.5),
            p95=Percentile("duration_ms", 0.95),
        )
        .order_by("server_path", "-requests", key)
    )
    found: dict[str, list[Series]] = {}
    for row in totals:
        series = Series(row[key], row["requests"], row["errors"], row["p50"], row["p95"])
        found.setdefault(row["server_path"], []).append(series)
    return found
