"""The MCP operation histograms of the OpenTelemetry GenAI conventions (`mcp.server.operation.duration`,
`mcp.client.operation.duration`) fed by the gateway's tool_execution metrics: exactly the advised bucket
bounds, by method, tool and error.type, labels bounded against a hostile upstream (tool names beyond the
cap and unknown error types fold into `_other`), on the Prometheus scrape and the OTLP push alike."""

import uuid

import pytest
import redis

from metrics import aggregates, otlp
from metrics.exporter import ScrapeServer
from tests.metrics.otlp_receiver import OtlpReceiver
from tests.metrics.test_aggregates import _url, record, series, tool
from tests.metrics.test_export import _attrs, _points, scrape

ADVISED = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]


def call(service: str, name: str, *, ms: float, upstream_ms: float | None, error_type=None) -> dict:
    made = tool(service, name, duration_ms=ms)
    made["dimensions"] |= {"error_type": error_type, "upstream_ms": upstream_ms}
    return made


@pytest.fixture
def svc():
    return f"ops-{uuid.uuid4().hex[:8]}"


def test_each_call_is_observed_on_both_sides_by_method_tool_and_error_type(svc):
    record(
        [
            call(svc, "get_weather", ms=40, upstream_ms=35),
            call(svc, "get_weather", ms=1500, upstream_ms=1490, error_type="tool_error"),
            call(svc, "get_weather", ms=8, upstream_ms=None, error_type="-32602"),
        ]
    )

    server = {
        p.labels["error.type"]: (p.count, p.bucket_counts)
        for p in series("mcp.server.operation.duration", svc)
    }
    client = {p.labels["error.type"]: p.count for p in series("mcp.client.operation.duration", svc)}

    assert aggregates.MCP_SERVER_DURATION.bounds == tuple(ADVISED)
    assert server[""] == (1, (0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))  # 0.04 s: le=0.05
    assert server["tool_error"][1][7] == 1  # 1.5 s: le=2
    assert server["-32602"][1][0] == 1  # 0.008 s: le=0.01
    assert client == {"": 1, "tool_error": 1}  # the call that never went upstream has no client side
    labels = series("mcp.server.operation.duration", svc)[0].labels
    assert labels == {
        "service": svc,
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "get_weather",
        "error.type": "",
    }


def test_tool_names_beyond_the_cap_and_unknown_error_types_fold_into_other(svc, monkeypatch):
    monkeypatch.setattr(aggregates, "MCP_TOOL_NAME_CAP", 2)
    redis.Redis.from_url(_url()).delete(aggregates.MCP_TOOL_NAMES_KEY)

    record([call(svc, f"tool_{n}", ms=5, upstream_ms=4, error_type="weird code") for n in range(5)])

    points = series("mcp.server.operation.duration", svc)
    assert sorted((p.labels["gen_ai.tool.name"], p.labels["error.type"], p.count) for p in points) == [
        ("_other", "_other", 3),
        ("tool_0", "_other", 1),
        ("tool_1", "_other", 1),
    ]


def test_the_scrape_and_the_push_carry_them_with_exactly_the_advised_bounds(svc, free_port):
    record([call(svc, "get_weather", ms=40, upstream_ms=35)])
    server = ScrapeServer("127.0.0.1", free_port).start()
    try:
        text = scrape(free_port).text
    finally:
        server.stop()
    with OtlpReceiver() as receiver:
        assert otlp.push(endpoint=receiver.endpoint) is True

    labels = (
        'error_type=""',
        'gen_ai_tool_name="get_weather"',
        'mcp_method_name="tools/call"',
        f'service="{svc}"',
    )
    bounds = [
        line.split('le="')[1].split('"')[0]
        for line in text.splitlines()
        if line.startswith("mcp_server_operation_duration_seconds_bucket{")
        and all(pair in line for pair in labels)
    ]
    assert "# TYPE mcp_server_operation_duration_seconds histogram" in text
    assert "# TYPE mcp_client_operation_duration_seconds histogram" in text
    assert bounds == [*(f"{bound:g}" if bound < 1 else f"{float(bound)}" for bound in ADVISED), "+Inf"]
    [point] = _points(receiver.received[0].request, "mcp.server.operation.duration", svc)
    assert list(point.explicit_bounds) == ADVISED
    assert _attrs(point)["gen_ai.tool.name"] == "get_weather"
