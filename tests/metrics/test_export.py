"""Both exports of the aggregates over real sockets: the Prometheus scrape endpoint, the OTLP/HTTP push
to a real receiver, and the `metrics_exporter` process itself."""

import logging
import signal
import subprocess
import sys
import time
import uuid

import pytest
import requests
from opentelemetry.proto.metrics.v1 import metrics_pb2

from metrics import aggregates, otlp
from metrics.exporter import ScrapeServer
from tests.conftest import PROJECT_DIR, clean_env, run_manage
from tests.metrics.otlp_receiver import OtlpReceiver
from tests.metrics.test_aggregates import auth, metric, record, tool


@pytest.fixture
def svc():
    return f"svc-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def recorded(svc):
    """Two auth requests (one timed), one timed tool call, one search and one protocol latency."""
    record(
        [
            auth(svc, duration_ms=250),
            auth(svc, success=False, method="oauth"),
            tool(svc, "get_weather", duration_ms=40),
            metric("tool_discovery", svc, duration_ms=12, query="weather", results_count=2, top_k=5),
            metric("protocol_latency", svc, duration_ms=700, flow_step="selection"),
        ]
    )
    return svc


def scrape(port: int, path: str = "/metrics") -> requests.Response:
    return requests.get(f"http://127.0.0.1:{port}{path}", timeout=10)


def test_scrape_serves_counters_and_histograms_in_the_text_format(recorded, free_port):
    svc = recorded
    server = ScrapeServer("127.0.0.1", free_port).start()
    try:
        response = scrape(free_port)
    finally:
        server.stop()

    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    lines = response.text.splitlines()
    jwt = f'method="jwt",service="{svc}",success="true"'
    call = f'method="tools/call",service="{svc}",success="true",tool_name="get_weather"'
    for line in (
        "# TYPE mcp_auth_requests_total counter",
        f"mcp_auth_requests_total{{{jwt}}} 1.0",
        f'mcp_auth_requests_total{{method="oauth",service="{svc}",success="false"}} 1.0',
        f"mcp_tool_executions_total{{{call}}} 1.0",
        f'mcp_tool_discovery_total{{service="{svc}"}} 1.0',
        "# TYPE mcp_auth_request_duration_seconds histogram",
        f'mcp_auth_request_duration_seconds_bucket{{le="0.1",{jwt}}} 0.0',
        f'mcp_auth_request_duration_seconds_bucket{{le="0.25",{jwt}}} 1.0',
        f'mcp_auth_request_duration_seconds_bucket{{le="+Inf",{jwt}}} 1.0',
        f"mcp_auth_request_duration_seconds_count{{{jwt}}} 1.0",
        f"mcp_auth_request_duration_seconds_sum{{{jwt}}} 0.25",
        f'mcp_protocol_latency_seconds_bucket{{flow_step="selection",le="0.5",service="{svc}"}} 0.0',
        f'mcp_protocol_latency_seconds_bucket{{flow_step="selection",le="0.75",service="{svc}"}} 1.0',
        f'mcp_protocol_latency_seconds_bucket{{flow_step="selection",le="10.0",service="{svc}"}} 1.0',
        f'mcp_protocol_latency_seconds_count{{flow_step="selection",service="{svc}"}} 1.0',
        f'mcp_protocol_latency_seconds_sum{{flow_step="selection",service="{svc}"}} 0.7',
        "# TYPE mcp_tool_execution_duration_seconds histogram",
        f'mcp_tool_execution_duration_seconds_bucket{{le="0.025",{call}}} 0.0',
        f'mcp_tool_execution_duration_seconds_bucket{{le="0.05",{call}}} 1.0',
        f"mcp_tool_execution_duration_seconds_sum{{{call}}} 0.04",
    ):
        assert line in lines, line
    assert "query" not in response.text
    assert not [
        line for line in lines if line.startswith("mcp_auth_request_duration_seconds") and "oauth" in line
    ]


def test_a_restarted_exporter_reports_the_same_totals(recorded, free_port):
    first = ScrapeServer("127.0.0.1", free_port).start()
    try:
        before = scrape(free_port).text
    finally:
        first.stop()

    second = ScrapeServer("127.0.0.1", 0).start()  # a new process: nothing kept but Redis
    try:
        after = scrape(second.port).text
        record([auth(recorded, duration_ms=1)])
        later = scrape(second.port).text
    finally:
        second.stop()

    jwt = f'mcp_auth_requests_total{{method="jwt",service="{recorded}",success="true"}}'
    assert f"{jwt} 1.0" in before.splitlines()
    assert after == before
    assert f"{jwt} 2.0" in later.splitlines()


def test_other_paths_are_404_and_other_methods_405(free_port):
    server = ScrapeServer("127.0.0.1", free_port).start()
    try:
        missing = [scrape(free_port, path).status_code for path in ("/", "/metrics/", "/health", "/metricsx")]
        posted = requests.post(f"http://127.0.0.1:{free_port}/metrics", timeout=10)
    finally:
        server.stop()

    assert missing == [404, 404, 404, 404]
    assert posted.status_code == 405
    assert posted.headers["Allow"] == "GET, HEAD"


def test_a_taken_port_is_an_oserror(free_port):
    server = ScrapeServer("127.0.0.1", free_port).start()
    try:
        with pytest.raises(OSError):
            ScrapeServer("127.0.0.1", free_port)
    finally:
        server.stop()


def _attrs(point) -> dict:
    return {kv.key: kv.value.string_value for kv in point.attributes}


def _points(request, name: str, svc: str) -> list:
    [metric_] = [m for m in request.resource_metrics[0].scope_metrics[0].metrics if m.name == name]
    data = metric_.sum if metric_.WhichOneof("data") == "sum" else metric_.histogram
    return [p for p in data.data_points if _attrs(p)["service"] == svc]


def test_otlp_push_sends_cumulative_sums_and_histograms(recorded, settings):
    svc = recorded
    settings.OTEL_SERVICE_NAME = "metrics-under-test"
    with OtlpReceiver() as receiver:
        assert otlp.push(endpoint=receiver.endpoint) is True

    [received] = receiver.received
    assert received.path == "/v1/metrics"
    assert received.content_type == "application/x-protobuf"
    request = received.request
    [resource_metrics] = request.resource_metrics
    assert _attrs(resource_metrics.resource) == {"service.name": "metrics-under-test"}
    metrics = {m.name: m for m in resource_metrics.scope_metrics[0].metrics}
    assert sorted(metrics) == sorted(i.name for i in aggregates.INSTRUMENTS)
    for name in ("mcp_auth_requests_total", "mcp_tool_executions_total", "mcp_tool_discovery_total"):
        assert metrics[name].WhichOneof("data") == "sum"
        assert metrics[name].sum.is_monotonic is True
        assert metrics[name].sum.aggregation_temporality == metrics_pb2.AGGREGATION_TEMPORALITY_CUMULATIVE
    for name in ("mcp_auth_request_duration_seconds", "mcp_tool_execution_duration_seconds"):
        assert metrics[name].WhichOneof("data") == "histogram"
        assert metrics[name].unit == "s"
        assert (
            metrics[name].histogram.aggregation_temporality == metrics_pb2.AGGREGATION_TEMPORALITY_CUMULATIVE
        )

    auth_points = _points(request, "mcp_auth_requests_total", svc)
    assert sorted((_attrs(p)["method"], _attrs(p)["success"], p.as_int) for p in auth_points) == [
        ("jwt", "true", 1),
        ("oauth", "false", 1),
    ]
    [tool_point] = _points(request, "mcp_tool_executions_total", svc)
    assert _attrs(tool_point) == {
        "service": svc,
        "method": "tools/call",
        "tool_name": "get_weather",
        "success": "true",
    }
    assert tool_point.as_int == 1
    [latency] = _points(request, "mcp_protocol_latency_seconds", svc)
    assert _attrs(latency) == {"service": svc, "flow_step": "selection"}
    assert (latency.count, latency.sum) == (1, 0.7)
    assert list(latency.explicit_bounds) == list(aggregates.BUCKET_BOUNDS)
    assert list(latency.bucket_counts) == [0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]
    started = int(aggregates.snapshot().started_at * 1e9)
    assert latency.start_time_unix_nano == started == tool_point.start_time_unix_nano
    assert latency.time_unix_nano >= latency.start_time_unix_nano


def test_a_second_push_stays_cumulative(recorded):
    with OtlpReceiver() as receiver:
        otlp.push(endpoint=receiver.endpoint)
        record([tool(recorded, "get_weather", duration_ms=40)])
        otlp.push(endpoint=receiver.endpoint)

    first, second = (_points(r.request, "mcp_tool_executions_total", recorded) for r in receiver.received)
    assert [p.as_int for p in first] == [1]
    assert [p.as_int for p in second] == [2]
    assert first[0].start_time_unix_nano == second[0].start_time_unix_nano


def test_otlp_push_to_a_failing_receiver_is_logged_not_raised(recorded, caplog):
    with OtlpReceiver(status=500) as receiver, caplog.at_level(logging.WARNING, logger="metrics.otlp"):
        assert otlp.push(endpoint=receiver.endpoint) is False

    assert len(receiver.received) == 1
    assert caplog.messages == [
        f"OTLP push to {receiver.endpoint}/v1/metrics failed: HTTP 500 Internal Server Error"
    ]


def test_otlp_push_to_a_receiver_that_is_down_is_logged_not_raised(recorded, free_port, caplog):
    with caplog.at_level(logging.WARNING, logger="metrics.otlp"):
        assert otlp.push(endpoint=f"http://127.0.0.1:{free_port}", timeout=2) is False

    [message] = caplog.messages
    assert message.startswith(f"OTLP push to http://127.0.0.1:{free_port}/v1/metrics failed: ")


def test_the_endpoint_may_be_given_with_or_without_the_metrics_path():
    assert otlp.metrics_url("http://collector:4318") == "http://collector:4318/v1/metrics"
    assert otlp.metrics_url("http://collector:4318/") == "http://collector:4318/v1/metrics"
    assert otlp.metrics_url("http://collector:4318/v1/metrics") == "http://collector:4318/v1/metrics"


def _exporter_env(settings, **overrides) -> dict:
    return clean_env(
        DATABASE_URL="postgresql://registry@127.0.0.1:1/registry",  # the exporter never touches it
        REDIS_URL=settings.REDIS_URL,
        SECRET_KEY="test-secret-key-for-the-metrics-exporter",
        JWT_SIGNING_KEY="test-jwt-key-for-the-metrics-exporter",
        PYTHONUNBUFFERED="1",
        **overrides,
    )


def test_the_exporter_command_names_the_variable_when_the_port_is_taken(free_port, settings):
    server = ScrapeServer("127.0.0.1", free_port).start()
    try:
        result = run_manage(
            "metrics_exporter", env=_exporter_env(settings, OTEL_PROMETHEUS_PORT=free_port), timeout=60
        )
    finally:
        server.stop()

    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"CommandError: OTEL_PROMETHEUS_PORT: port {free_port} on 127.0.0.1 is not available "
        "(Address already in use); stop what uses it or set OTEL_PROMETHEUS_PORT to another port"
    )


def test_the_exporter_command_serves_both_exports_and_stops_on_sigterm(recorded, free_port, settings):
    with OtlpReceiver() as receiver:
        env = _exporter_env(
            settings,
            OTEL_PROMETHEUS_ENABLED="true",
            OTEL_PROMETHEUS_PORT=free_port,
            OTEL_OTLP_ENDPOINT=receiver.endpoint,
            OTEL_EXPORT_INTERVAL_SECONDS="0.5",
            OTEL_SERVICE_NAME="exporter-process",
        )
        process = subprocess.Popen(
            [sys.executable, "manage.py", "metrics_exporter"],
            cwd=PROJECT_DIR,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            banner = process.stdout.readline().strip()
            response = scrape(free_port)
            deadline = time.monotonic() + 30
            while len(receiver.received) < 2 and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            process.send_signal(signal.SIGTERM)
            output, _ = process.communicate(timeout=30)

    assert banner == (
        f"metrics exporter: scrape on http://127.0.0.1:{free_port}/metrics; "
        f"OTLP push to {receiver.endpoint}/v1/metrics every 0.5s"
    )
    assert response.status_code == 200
    assert f'mcp_tool_discovery_total{{service="{recorded}"}} 1.0' in response.text.splitlines()
    assert len(receiver.received) >= 2
    resource = receiver.received[0].request.resource_metrics[0].resource
    assert _attrs(resource) == {"service.name": "exporter-process"}
    assert process.returncode == 0
    assert output.strip().splitlines()[-1] == "metrics exporter: stopped"
