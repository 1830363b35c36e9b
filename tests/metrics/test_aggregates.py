"""The Redis aggregates behind both exporters: exact series after real pipelines, bounded labels, and
totals shared by every process."""

import threading
import uuid

import pytest
import redis

from metrics import aggregates
from metrics.aggregates import CounterPoint, HistogramPoint

NO_BUCKETS = (0,) * (len(aggregates.BUCKET_BOUNDS) + 1)


def metric(kind: str, service: str, *, duration_ms=None, **dimensions) -> dict:
    """A metric as ingestion hands it over after validation."""
    return {
        "id": uuid.uuid4().hex,
        "type": kind,
        "service": service,
        "version": "1.0.0",
        "value": 1.0,
        "duration_ms": duration_ms,
        "timestamp": 1_760_000_000.0,
        "dimensions": dimensions,
        "metadata": {},
    }


def auth(service, *, success=True, method="jwt", duration_ms=None):
    return metric(
        "auth_request",
        service,
        duration_ms=duration_ms,
        success=success,
        method=method,
        server="s",
        user_hash="h",
    )


def tool(service, tool_name, *, method="tools/call", success=True, duration_ms=None):
    return metric(
        "tool_execution",
        service,
        duration_ms=duration_ms,
        method=method,
        tool_name=tool_name,
        client_name="claude",
        success=success,
        input_size_bytes=10,
        output_size_bytes=None,
    )


def record(metrics, client=None):
    """Record through a real transaction, as ingestion does."""
    pipe = (client or redis.Redis.from_url(_url())).pipeline(transaction=True)
    aggregates.record(pipe, metrics)
    pipe.execute()


def _url():
    from django.conf import settings

    return settings.REDIS_URL


def buckets(**counts) -> tuple[int, ...]:
    """Per-bucket counts by bound, e.g. buckets(b0_25=1, inf=2) for le=0.25 and +Inf."""
    out = list(NO_BUCKETS)
    for name, count in counts.items():
        bound = float("inf") if name == "inf" else float(name[1:].replace("_", "."))
        out[[*aggregates.BUCKET_BOUNDS, float("inf")].index(bound)] = count
    return tuple(out)


def series(name: str, service: str) -> list:
    """One instrument's points of one service (other tests' services are left out)."""
    return [p for p in aggregates.snapshot().series[name] if p.labels["service"] == service]


def test_record_counts_each_metric_once_and_observes_durations_in_seconds():
    svc = f"auth-{uuid.uuid4().hex[:8]}"

    record(
        [
            auth(svc, duration_ms=250),
            auth(svc, duration_ms=1500),
            auth(svc, success=False, method="oauth"),  # no duration: counted, not observed
            metric(
                "tool_discovery", svc, duration_ms=40, query="find weather tools", results_count=3, top_k=5
            ),
            metric("protocol_latency", svc, duration_ms=5, flow_step="discovery"),
            metric("protocol_latency", svc, duration_ms=12_000, flow_step="full_flow"),
        ]
    )

    assert series("mcp_auth_requests_total", svc) == [
        CounterPoint(labels={"service": svc, "success": "false", "method": "oauth"}, value=1),
        CounterPoint(labels={"service": svc, "success": "true", "method": "jwt"}, value=2),
    ]
    assert series("mcp_auth_request_duration_seconds", svc) == [
        HistogramPoint(
            labels={"service": svc, "success": "true", "method": "jwt"},
            count=2,
            sum=1.75,
            bucket_counts=buckets(b0_25=1, b2_5=1),
        )
    ]
    assert series("mcp_tool_discovery_total", svc) == [CounterPoint(labels={"service": svc}, value=1)]
    assert series("mcp_protocol_latency_seconds", svc) == [
        HistogramPoint(
            labels={"service": svc, "flow_step": "discovery"},
            count=1,
            sum=0.005,
            bucket_counts=buckets(b0_005=1),
        ),
        HistogramPoint(
            labels={"service": svc, "flow_step": "full_flow"}, count=1, sum=12.0, bucket_counts=buckets(inf=1)
        ),
    ]
    assert aggregates.snapshot().started_at is not None


def test_record_only_queues_commands_until_the_caller_executes():
    client = redis.Redis.from_url(_url())
    pipe = client.pipeline(transaction=True)

    aggregates.record(pipe, [auth("queued", duration_ms=3), tool("queued", "search", duration_ms=3)])

    assert len(pipe.command_stack) > 0
    assert client.keys(f"{aggregates.KEY_PREFIX}*") == []
    pipe.execute()
    assert series("mcp_auth_requests_total", "queued")[0].value == 1
    assert series("mcp_tool_executions_total", "queued")[0].value == 1


def test_bucket_bounds_are_inclusive_upper_bounds():
    svc = f"bounds-{uuid.uuid4().hex[:8]}"

    record([auth(svc, duration_ms=ms) for ms in (0, 5, 5.001, 10_000, 10_001)])

    [point] = series("mcp_auth_request_duration_seconds", svc)
    assert point.count == 5
    assert point.bucket_counts == buckets(b0_005=2, b0_01=1, b10_0=1, inf=1)


def test_kinds_without_instruments_change_nothing():
    record(
        [
            metric("registry_operation", "reg", duration_ms=3, operation="list"),
            metric("health_check", "reg", duration_ms=3, server="x"),
            metric("custom", "reg", duration_ms=3, anything="goes"),
        ]
    )

    snapshot = aggregates.snapshot()
    assert snapshot.started_at is None
    assert all(points == [] for points in snapshot.series.values())


def test_the_discovery_query_is_never_stored_nor_a_label():
    svc = f"search-{uuid.uuid4().hex[:8]}"
    query = f"secret-query-{uuid.uuid4().hex}"

    record([metric("tool_discovery", svc, duration_ms=9, query=query, results_count=1, top_k=3, top_n=None)])

    client = redis.Redis.from_url(_url())
    stored = b"".join(
        k + b"".join(f + v for f, v in client.hgetall(k).items())
        for k in client.keys(f"{aggregates.KEY_PREFIX}*")
        if client.type(k) == b"hash"
    )
    assert query.encode() not in stored
    assert series("mcp_tool_discovery_total", svc) == [CounterPoint(labels={"service": svc}, value=1)]


def test_tool_names_outside_the_safe_charset_or_length_fold_into_other():
    svc = f"tools-{uuid.uuid4().hex[:8]}"

    record(
        [
            tool(svc, "get_weather", duration_ms=20),
            tool(svc, "fs/read-file.v2", duration_ms=20),
            tool(svc, "drop table; --", duration_ms=20),
            tool(svc, "x" * 129, duration_ms=20),
            tool(svc, "", method="tools/list", duration_ms=20),
        ]
    )

    counts = {
        (p.labels["method"], p.labels["tool_name"]): p.value for p in series("mcp_tool_executions_total", svc)
    }
    assert counts == {
        ("tools/call", "(other)"): 2,
        ("tools/call", "fs/read-file.v2"): 1,
        ("tools/call", "get_weather"): 1,
        ("tools/list", ""): 1,
    }
    durations = {p.labels["tool_name"]: p.count for p in series("mcp_tool_execution_duration_seconds", svc)}
    assert durations == {"(other)": 2, "fs/read-file.v2": 1, "get_weather": 1, "": 1}


def test_distinct_tool_names_beyond_the_cap_fold_into_other_in_both_instruments(monkeypatch):
    monkeypatch.setattr(aggregates, "TOOL_NAME_CAP", 2)
    svc = f"cap-{uuid.uuid4().hex[:8]}"

    record([tool(svc, "alpha", duration_ms=1), tool(svc, "beta", duration_ms=1)])
    record([tool(svc, "gamma", duration_ms=1), tool(svc, "alpha", duration_ms=1), tool(svc, "delta")])

    assert series("mcp_tool_executions_total", svc) == [
        CounterPoint(
            labels={"service": svc, "method": "tools/call", "tool_name": name, "success": "true"}, value=n
        )
        for name, n in (("(other)", 2), ("alpha", 2), ("beta", 1))
    ]
    assert [(p.labels["tool_name"], p.count) for p in series("mcp_tool_execution_duration_seconds", svc)] == [
        ("(other)", 1),
        ("alpha", 2),
        ("beta", 1),
    ]
    assert redis.Redis.from_url(_url()).smembers(aggregates.TOOL_NAMES_KEY) == {b"alpha", b"beta"}


def test_two_processes_recording_separately_add_up():
    svc = f"shared-{uuid.uuid4().hex[:8]}"
    first, second = redis.Redis.from_url(_url()), redis.Redis.from_url(_url())

    record([auth(svc, duration_ms=100), tool(svc, "search", duration_ms=30)], client=first)
    record([auth(svc, duration_ms=300), tool(svc, "search", success=True)], client=second)

    [auth_point] = series("mcp_auth_request_duration_seconds", svc)
    assert (auth_point.count, auth_point.sum) == (2, 0.4)
    assert [p.value for p in series("mcp_auth_requests_total", svc)] == [2]
    assert [p.value for p in series("mcp_tool_executions_total", svc)] == [2]
    assert [p.count for p in series("mcp_tool_execution_duration_seconds", svc)] == [1]


def test_concurrent_writers_lose_nothing_and_respect_the_tool_cap(monkeypatch):
    monkeypatch.setattr(aggregates, "TOOL_NAME_CAP", 5)
    svc = f"race-{uuid.uuid4().hex[:8]}"

    def writer(worker: int):
        client = redis.Redis.from_url(_url())
        for batch in range(25):
            record(
                [tool(svc, f"tool{(worker * 7 + batch + i) % 20}", duration_ms=2) for i in range(10)], client
            )

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    counters = series("mcp_tool_executions_total", svc)
    assert sum(p.value for p in counters) == 1000
    assert len(redis.Redis.from_url(_url()).smembers(aggregates.TOOL_NAMES_KEY)) == 5
    assert len({p.labels["tool_name"] for p in counters}) == 6  # five admitted names and "(other)"
    assert sum(p.count for p in series("mcp_tool_execution_duration_seconds", svc)) == 1000


@pytest.mark.parametrize("raw", [None, "", 42, "a b", "x" * 129, "(other)"])
def test_tool_name_label_keeps_only_tool_like_names(raw):
    expected = "" if raw in (None, "") else "(other)"
    assert aggregates.tool_name_label(raw) == expected


def test_clear_drops_every_aggregate():
    record([auth("gone", duration_ms=1), tool("gone", "t", duration_ms=1)])

    aggregates.clear()

    snapshot = aggregates.snapshot()
    assert snapshot.started_at is None
    assert all(points == [] for points in snapshot.series.values())


def test_the_docs_state_the_bucket_bounds_and_the_tool_name_rule():
    from tests.conftest import PROJECT_DIR

    text = " ".join((PROJECT_DIR / "docs" / "metrics.md").read_text().split())

    assert ", ".join(f"{bound:g}" for bound in aggregates.BUCKET_BOUNDS) + ", and +Inf" in text
    assert f"At most {aggregates.TOOL_NAME_CAP} distinct tool names" in text
    assert f"reported as `{aggregates.OTHER_TOOL_NAME}`" in text
    assert "1 to 128 characters of `A-Z a-z 0-9 _ . / : -`" in text
    assert aggregates.TOOL_NAME_PATTERN.pattern == "[A-Za-z0-9_./:-]{1,128}"
