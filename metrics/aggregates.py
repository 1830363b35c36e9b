"""Cumulative aggregates of the exported instruments, kept in Redis so that every ingestion process adds
to the same totals and every exporter (scrape or OTLP, now or after a restart) reads them. One more
instrument is counted where it happens, not ingested: the gateway's refusals by a limit or a quarantine
(`refusal_counted`), so a refused call costs no metric message.

Ingestion calls `record` inside the Redis transaction that also buffers the batch, so each accepted
metric changes the aggregates exactly once. Both exporters read them through `snapshot`.

Layout (one hash per instrument, so a snapshot is one HGETALL each in one transaction):

- `registry:metrics:agg:<instrument>`: fields `c:<series>` (count), and for histograms `s:<series>`
  (sum of seconds) and `b<i>:<series>` (observations in bucket i, not cumulative; i = len(BUCKET_BOUNDS)
  is +Inf). `<series>` is the compact JSON list of the label values in the instrument's label order.
- `registry:metrics:agg:tool_names`: the tool_name label values admitted so far (at most TOOL_NAME_CAP).
- `registry:metrics:agg:started_at`: when the first metric was aggregated (the OTLP start time).

Counting rule: each metric counts 1 (one request, one execution, one search), whatever its `value`;
histograms observe `duration_ms / 1000` and skip metrics without a duration (they are still counted).

Labels are bounded: enumerated dimensions outside their choices fold into "other", the discovery query
is never a label, and tool_name keeps only names matching TOOL_NAME_PATTERN, of which the first
TOOL_NAME_CAP distinct ones become label values; any other name is reported as OTHER_TOOL_NAME.
"""

from __future__ import annotations

import bisect
import json
import math
import re
import time
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache

import redis

from core.metric_choices import AuthMethod, FlowStep, MetricType, ToolMethod, values_of
from core.redis_clients import sync_client

KEY_PREFIX = "registry:metrics:agg:"
TOOL_NAMES_KEY = f"{KEY_PREFIX}tool_names"
STARTED_AT_KEY = f"{KEY_PREFIX}started_at"

# Prometheus' default buckets, in seconds (upper bounds, inclusive); +Inf is implied.
BUCKET_BOUNDS: tuple[float, ...] = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
)

# MCP tool names: 1 to 128 of these characters. Anything else is not a label value.
TOOL_NAME_PATTERN = re.compile(r"[A-Za-z0-9_./:-]{1,128}")
TOOL_NAME_CAP = 200  # distinct tool_name values, all services together
OTHER_TOOL_NAME = "(other)"  # cannot collide with a real name: parentheses fail TOOL_NAME_PATTERN
OTHER = "other"  # an enumerated dimension outside its choices (ingestion should never let one through)


@dataclass(frozen=True)
class Instrument:
    """One exported instrument: its name, kind and the fixed order of its labels (OpenTelemetry's names,
    which may hold dots; the Prometheus scrape spells them with underscores)."""

    name: str
    kind: str  # "counter" or "histogram"
    labels: tuple[str, ...]
    description: str
    unit: str  # UCUM, for OTLP
    bounds: tuple[float, ...] = BUCKET_BOUNDS  # a histogram's bucket upper bounds, seconds

    @property
    def key(self) -> str:
        return f"{KEY_PREFIX}{self.name}"

    @property
    def prometheus_name(self) -> str:
        name = self.name.replace(".", "_")
        return name if self.unit != "s" or name.endswith("_seconds") else f"{name}_seconds"

    @property
    def prometheus_labels(self) -> list[str]:
        return [label.replace(".", "_") for label in self.labels]


AUTH_LABELS = ("service", "success", "method")
TOOL_LABELS = ("service", "method", "tool_name", "success")

AUTH_REQUESTS = Instrument(
    "mcp_auth_requests_total", "counter", AUTH_LABELS, "Authentication requests.", "{request}"
)
TOOL_EXECUTIONS = Instrument(
    "mcp_tool_executions_total", "counter", TOOL_LABELS, "MCP tool executions.", "{execution}"
)
TOOL_DISCOVERY = Instrument(
    "mcp_tool_discovery_total", "counter", ("service",), "Tool discovery (semantic) searches.", "{search}"
)
AUTH_DURATION = Instrument(
    "mcp_auth_request_duration_seconds", "histogram", AUTH_LABELS, "Authentication request duration.", "s"
)
TOOL_DURATION = Instrument(
    "mcp_tool_execution_duration_seconds", "histogram", TOOL_LABELS, "MCP tool execution duration.", "s"
)
PROTOCOL_LATENCY = Instrument(
    "mcp_protocol_latency_seconds",
    "histogram",
    ("service", "flow_step"),
    "Time between two MCP protocol steps of one session.",
    "s",
)
GATEWAY_REFUSALS = Instrument(
    "mcp_gateway_refusals_total",
    "counter",
    ("service", "caller_kind", "reason"),
    "Gateway calls refused by a limit (rate_limited, limits_unavailable) or a quarantine (quarantined).",
    "{refusal}",
)
# The MCP operation histograms of the OpenTelemetry GenAI conventions (semantic-conventions-genai v0.1.0,
# docs/gen-ai/mcp.md): their advised bucket bounds, and their attributes. A tool name is one of the first
# MCP_TOOL_NAME_CAP seen, else OTHER_LABEL; an error.type a JSON-RPC code of the standard or server range,
# `tool_error`, or OTHER_LABEL: no upstream can grow the scrape with names or codes of its own.
MCP_BOUNDS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
MCP_LABELS = ("service", "mcp.method.name", "gen_ai.tool.name", "error.type")
MCP_TOOL_NAMES_KEY = f"{KEY_PREFIX}mcp_tool_names"
MCP_TOOL_NAME_CAP = 200
OTHER_LABEL = "_other"
ERROR_TYPE_PATTERN = re.compile(r"-32[0-9]{3}|tool_error")
MCP_SERVER_DURATION = Instrument(
    "mcp.server.operation.duration",
    "histogram",
    MCP_LABELS,
    "MCP request duration as observed on the receiver (the gateway), received to answered.",
    "s",
    MCP_BOUNDS,
)
MCP_CLIENT_DURATION = Instrument(
    "mcp.client.operation.duration",
    "histogram",
    MCP_LABELS,
    "MCP request duration as observed on the sender (the gateway toward the upstream), sent to answered.",
    "s",
    MCP_BOUNDS,
)
REFUSAL_REASONS = ("rate_limited", "limits_unavailable", "quarantined")
CALLER_KINDS = ("user", "service_account", "application", "anonymous")
INSTRUMENTS: tuple[Instrument, ...] = (
    AUTH_REQUESTS,
    TOOL_EXECUTIONS,
    TOOL_DISCOVERY,
    AUTH_DURATION,
    TOOL_DURATION,
    PROTOCOL_LATENCY,
    GATEWAY_REFUSALS,
    MCP_SERVER_DURATION,
    MCP_CLIENT_DURATION,
)


@dataclass(frozen=True)
class CounterPoint:
    labels: dict[str, str]
    value: int


@dataclass(frozen=True)
class HistogramPoint:
    labels: dict[str, str]
    count: int
    sum: float  # seconds
    bucket_counts: tuple[int, ...]  # per bucket, not cumulative; len(BUCKET_BOUNDS) + 1 (last is +Inf)


@dataclass(frozen=True)
class Snapshot:
    """Every series of every instrument, read in one transaction."""

    started_at: float | None  # epoch seconds of the first aggregated metric; None before any
    series: dict[str, list]  # instrument name -> CounterPoint or HistogramPoint list, sorted by labels


# -- write side ---------------------------------------------------------------------------------------

# Tool-labelled series go through this script so the tool_name cap is decided inside the transaction,
# atomically with the increments, without the caller reading anything.
# KEYS: tool names set, tool counter hash, tool histogram hash.
# ARGV: cap, other name, then groups of 7: tool, series prefix, series suffix, counter increment,
#       histogram count, histogram sum (seconds), bucket increments as "i:n,i:n".
_TOOL_SCRIPT = """
local cap = tonumber(ARGV[1])
local other = ARGV[2]
for i = 3, #ARGV, 7 do
  local tool = ARGV[i]
  if tool ~= '' and tool ~= other and redis.call('SISMEMBER', KEYS[1], tool) == 0 then
    if redis.call('SCARD', KEYS[1]) < cap then
      redis.call('SADD', KEYS[1], tool)
    else
      tool = other
    end
  end
  local series = ARGV[i + 1] .. tool .. ARGV[i + 2]
  local n = tonumber(ARGV[i + 3])
  if n > 0 then redis.call('HINCRBY', KEYS[2], 'c:' .. series, n) end
  local m = tonumber(ARGV[i + 4])
  if m > 0 then
    redis.call('HINCRBY', KEYS[3], 'c:' .. series, m)
    redis.call('HINCRBYFLOAT', KEYS[3], 's:' .. series, ARGV[i + 5])
    for b, k in string.gmatch(ARGV[i + 6], '(%d+):(%d+)') do
      redis.call('HINCRBY', KEYS[3], 'b' .. b .. ':' .. series, tonumber(k))
    end
  end
end
return 0
"""


@lru_cache(maxsize=1)
def _tool_script():
    return sync_client().register_script(_TOOL_SCRIPT)


def _series(values) -> str:
    return json.dumps(list(values), separators=(",", ":"), ensure_ascii=False)


def _choice(value, choices) -> str:
    return value if value in values_of(choices) else OTHER


def _flag(value) -> str:
    return "true" if value is True else "false"


def tool_name_label(raw) -> str:
    """The label value a sender's tool_name becomes before the cap: kept if it looks like a tool name."""
    if raw is None or raw == "":
        return ""
    if isinstance(raw, str) and TOOL_NAME_PATTERN.fullmatch(raw):
        return raw
    return OTHER_TOOL_NAME


def _seconds(metric: dict) -> float | None:
    duration_ms = metric.get("duration_ms")
    if isinstance(duration_ms, bool) or not isinstance(duration_ms, int | float):
        return None
    if not math.isfinite(duration_ms) or duration_ms < 0:
        return None
    return duration_ms / 1000


class _Histogram:
    """Observations of one series within one batch."""

    __slots__ = ("count", "sum", "buckets", "bounds")

    def __init__(self, bounds: tuple[float, ...] = BUCKET_BOUNDS):
        self.count = 0
        self.sum = 0.0
        self.buckets: dict[int, int] = defaultdict(int)
        self.bounds = bounds

    def observe(self, seconds: float) -> None:
        self.count += 1
        self.sum += seconds
        self.buckets[bisect.bisect_left(self.bounds, seconds)] += 1


def record(pipe: redis.client.Pipeline, metrics: list[dict]) -> None:
    """Queue the aggregate updates for a batch of validated metrics on `pipe` (no reads, no execute).

    The batch is summed per series first, so a batch of N metrics costs one command per touched field.
    The tool_name cap is decided by a script queued on the same pipeline, inside the caller's transaction.
    """
    counters: dict[tuple[Instrument, tuple], int] = defaultdict(int)
    histograms: dict[tuple[Instrument, tuple], _Histogram] = defaultdict(_Histogram)
    tools: dict[tuple, list] = {}  # (service, method, tool, success) -> [count, _Histogram]
    operations: dict[tuple, _Histogram] = {}  # (instrument, service, method, tool, error.type)

    for metric in metrics:
        kind = metric.get("type")
        service = str(metric.get("service", ""))
        dims = metric.get("dimensions") or {}
        seconds = _seconds(metric)
        if kind == MetricType.AUTH_REQUEST:
            labels = (service, _flag(dims.get("success")), _choice(dims.get("method"), AuthMethod))
            counters[AUTH_REQUESTS, labels] += 1
            if seconds is not None:
                histograms[AUTH_DURATION, labels].observe(seconds)
        elif kind == MetricType.TOOL_EXECUTION:
            labels = (
                service,
                _choice(dims.get("method"), ToolMethod),
                tool_name_label(dims.get("tool_name")),
                _flag(dims.get("success")),
            )
            entry = tools.setdefault(labels, [0, _Histogram()])
            entry[0] += 1
            if seconds is not None:
                entry[1].observe(seconds)
            _operations(operations, metric, service, labels[1], seconds)
        elif kind == MetricType.TOOL_DISCOVERY:
            counters[TOOL_DISCOVERY, (service,)] += 1
        elif kind == MetricType.PROTOCOL_LATENCY and seconds is not None:
            histograms[PROTOCOL_LATENCY, (service, _choice(dims.get("flow_step"), FlowStep))].observe(seconds)

    for (instrument, labels), count in counters.items():
        pipe.hincrby(instrument.key, f"c:{_series(labels)}", count)
    for (instrument, labels), histogram in histograms.items():
        series = _series(labels)
        pipe.hincrby(instrument.key, f"c:{series}", histogram.count)
        pipe.hincrbyfloat(instrument.key, f"s:{series}", histogram.sum)
        for index, count in histogram.buckets.items():
            pipe.hincrby(instrument.key, f"b{index}:{series}", count)
    if tools:
        args: list = [TOOL_NAME_CAP, OTHER_TOOL_NAME]
        for (service, method, tool, success), (count, histogram) in tools.items():
            # The series JSON with the tool name cut out: tool names never need JSON escaping.
            prefix = _series([service, method])[:-1] + ',"'
            suffix = '",' + _series([success])[1:]
            buckets = ",".join(f"{index}:{n}" for index, n in histogram.buckets.items())
            args += [tool, prefix, suffix, count, histogram.count, repr(histogram.sum), buckets]
        _tool_script()(keys=[TOOL_NAMES_KEY, TOOL_EXECUTIONS.key, TOOL_DURATION.key], args=args, client=pipe)
    for instrument in (MCP_SERVER_DURATION, MCP_CLIENT_DURATION):
        args = [MCP_TOOL_NAME_CAP, OTHER_LABEL]
        for (kept, service, method, tool, error_type), histogram in operations.items():
            if kept is instrument:
                buckets = ",".join(f"{index}:{n}" for index, n in histogram.buckets.items())
                prefix = _series([service, method])[:-1] + ',"'
                suffix = '",' + _series([error_type])[1:]
                args += [tool, prefix, suffix, 0, histogram.count, repr(histogram.sum), buckets]
        if len(args) > 2:  # the same script: the cap decided inside the transaction (no counter: 0)
            _tool_script()(keys=[MCP_TOOL_NAMES_KEY, instrument.key, instrument.key], args=args, client=pipe)
    if counters or histograms or tools:
        pipe.set(STARTED_AT_KEY, f"{time.time():.6f}", nx=True)


def _operations(operations: dict, metric: dict, service: str, method: str, seconds: float | None) -> None:
    """A tool_execution's observations of the MCP operation histograms: the gateway's whole answer
    (server), and its exchange with the upstream (`upstream_ms`, client), each when measured."""
    dims = metric.get("dimensions") or {}
    tool = tool_name_label(dims.get("tool_name"))
    tool = OTHER_LABEL if tool == OTHER_TOOL_NAME else tool
    raw = dims.get("error_type")
    error_type = "" if raw in (None, "") else raw if ERROR_TYPE_PATTERN.fullmatch(str(raw)) else OTHER_LABEL
    upstream = _seconds({"duration_ms": dims.get("upstream_ms")})
    for instrument, observed in ((MCP_SERVER_DURATION, seconds), (MCP_CLIENT_DURATION, upstream)):
        if observed is not None:
            key = (instrument, service, method, tool, error_type)
            operations.setdefault(key, _Histogram(MCP_BOUNDS)).observe(observed)


def refusal_counted(service: str, caller_kind: str, reason: str) -> tuple[str, str]:
    """(hash key, field) the gateway increments for one refused call: labels bounded by the choices and
    the registered targets' paths."""
    labels = [
        service[:200],
        caller_kind if caller_kind in CALLER_KINDS else OTHER,
        reason if reason in REFUSAL_REASONS else OTHER,
    ]
    return GATEWAY_REFUSALS.key, f"c:{_series(labels)}"


# -- read side ----------------------------------------------------------------------------------------


def _parse(instrument: Instrument, raw: dict[bytes, bytes]) -> list:
    fields: dict[str, dict[str, bytes]] = defaultdict(dict)
    for field, value in raw.items():
        kind, _, series = field.decode().partition(":")
        fields[series][kind] = value
    points = []
    for series, values in fields.items():
        try:
            label_values = json.loads(series)
        except ValueError:
            continue
        if not isinstance(label_values, list) or len(label_values) != len(instrument.labels):
            continue
        labels = dict(zip(instrument.labels, (str(v) for v in label_values), strict=True))
        count = int(values.get("c", 0))
        if instrument.kind == "counter":
            points.append(CounterPoint(labels=labels, value=count))
        else:
            buckets = tuple(int(values.get(f"b{i}", 0)) for i in range(len(instrument.bounds) + 1))
            points.append(
                HistogramPoint(
                    labels=labels, count=count, sum=float(values.get("s", 0)), bucket_counts=buckets
                )
            )
    points.sort(key=lambda point: tuple(point.labels.values()))
    return points


def snapshot(client: redis.Redis | None = None) -> Snapshot:
    """All series of all instruments, as one consistent reading (a single MULTI/EXEC)."""
    pipe = (client or sync_client()).pipeline(transaction=True)
    for instrument in INSTRUMENTS:
        pipe.hgetall(instrument.key)
    pipe.get(STARTED_AT_KEY)
    *hashes, started_at = pipe.execute()
    return Snapshot(
        started_at=float(started_at) if started_at is not None else None,
        series={
            instrument.name: _parse(instrument, raw)
            for instrument, raw in zip(INSTRUMENTS, hashes, strict=True)
        },
    )


def clear(client: redis.Redis | None = None) -> None:
    """Drop every aggregate: exporters then report a counter reset (new start time), as after data loss."""
    keys = [instrument.key for instrument in INSTRUMENTS] + [
        TOOL_NAMES_KEY,
        MCP_TOOL_NAMES_KEY,
        STARTED_AT_KEY,
    ]
    (client or sync_client()).delete(*keys)
