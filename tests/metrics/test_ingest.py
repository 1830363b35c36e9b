"""POST /metrics: keys, validation per metric, honest status codes, rate limits; then the flush."""

import json

import pytest

from metrics import buffer
from metrics.models import (
    ApiKey,
    AuthMetric,
    DiscoveryMetric,
    GenericMetric,
    ProtocolLatencyMetric,
    ToolExecutionMetric,
)
from metrics.services import api_key_revoke, metrics_flush, rows_store
from tests.metrics.conftest import metric

pytestmark = pytest.mark.django_db


def batch(*metrics, service="registry"):
    return {"service": service, "version": "1.0.0", "metrics": list(metrics)}


def test_a_valid_batch_is_accepted_with_202_and_stored_by_the_next_flush(post_metrics, key_factory):
    key = key_factory()
    body = batch(
        *(metric(kind) for kind in ("auth_request", "tool_execution", "tool_discovery", "protocol_latency")),
        metric("health_check"),
        metric("registry_operation"),
        metric("custom"),
    )

    response = post_metrics(body, key)

    assert response.status_code == 202
    assert response.json() == {"accepted": 7, "rejected": 0, "request_id": response["X-Request-ID"]}
    assert buffer.pending() == 1
    assert metrics_flush() == 7
    assert buffer.pending() == 0
    auth = AuthMetric.objects.get()
    assert (auth.service, auth.version, auth.success, auth.method, auth.server, auth.user_hash) == (
        "registry",
        "1.0.0",
        True,
        "jwt",
        "/weather",
        "ab12",
    )
    assert (auth.value, auth.duration_ms) == (1.0, 12.5)
    tool = ToolExecutionMetric.objects.get()
    assert (tool.method, tool.tool_name, tool.client_name, tool.success) == (
        "tools/call",
        "forecast",
        "c",
        True,
    )
    discovery = DiscoveryMetric.objects.get()
    assert (discovery.query, discovery.results_count, discovery.top_k, discovery.top_n) == (
        "weather",
        3,
        5,
        None,
    )
    assert ProtocolLatencyMetric.objects.get().flow_step == "discovery"
    assert sorted(GenericMetric.objects.values_list("type", flat=True)) == [
        "custom",
        "health_check",
        "registry_operation",
    ]


def test_a_partly_valid_batch_is_202_with_each_rejection_named(post_metrics, key_factory):
    key = key_factory()
    body = batch(
        metric(),
        metric(type="bogus"),
        metric(value=None),
        metric(duration_ms=-1),
        metric(dimensions={"success": True, "method": "telepathy"}),
        metric(timestamp="2999-01-01T00:00:00Z"),
    )

    response = post_metrics(body, key)

    assert response.status_code == 202
    answer = response.json()
    assert (answer["accepted"], answer["rejected"]) == (1, 5)
    assert [(e["index"], e["field"]) for e in answer["errors"]] == [
        (1, "type"),
        (2, "value"),
        (3, "duration_ms"),
        (4, "dimensions.method"),
        (5, "timestamp"),
    ]
    assert answer["errors"][4]["message"] == "`timestamp` is more than 300 seconds in the future."


@pytest.mark.parametrize(
    ("bad", "field", "message"),
    [
        (metric(value="1"), "value", "`value` must be a number."),
        (metric(value=True), "value", "`value` must be a number."),
        (metric(duration_ms=10**12), "duration_ms", "`duration_ms` must be between 0 and 86400000 (a day)."),
        (
            metric(timestamp="yesterday"),
            "timestamp",
            "`timestamp` must be ISO 8601 or seconds since the epoch.",
        ),
        (
            metric(timestamp="2026-01-01T00:00:00"),
            "timestamp",
            "`timestamp` must carry a time zone (for example a trailing Z).",
        ),
        (metric(timestamp=0), "timestamp", "`timestamp` is older than the retention period."),
        (metric(dimensions={f"k{n}": n for n in range(33)}), "dimensions", "At most 32 dimensions."),
        (
            metric(dimensions={"x" * 65: 1}),
            "dimensions",
            "Dimension names are letters, digits, '_', '.', '-', at most 64 characters.",
        ),
        (
            metric(dimensions={"bad key": 1}),
            "dimensions",
            "Dimension names are letters, digits, '_', '.', '-', at most 64 characters.",
        ),
        (metric("custom", dimensions={"note": "x" * 257}), "dimensions.note", "At most 256 characters."),
        (
            metric("custom", dimensions={"nested": {"a": 1}}),
            "dimensions.nested",
            "Dimension values are strings, numbers, booleans or null.",
        ),
        (metric(dimensions={"method": "jwt"}), "dimensions.success", "`success` is required: true or false."),
        (
            metric("protocol_latency", dimensions={}),
            "dimensions.flow_step",
            "`flow_step` is required: one of discovery, selection, full_flow.",
        ),
        (
            metric("tool_discovery", dimensions={"results_count": -1}),
            "dimensions.results_count",
            "`results_count` must be a non-negative number.",
        ),
        (
            metric(metadata={"blob": "x" * 5000}),
            "metadata",
            "`metadata` must serialise to at most 4096 bytes.",
        ),
        ("not an object", "metric", "Each metric must be a JSON object."),
    ],
)
def test_a_batch_with_nothing_valid_is_422_with_the_reason(post_metrics, key_factory, bad, field, message):
    response = post_metrics(batch(bad), key_factory())

    assert response.status_code == 422
    answer = response.json()
    assert (answer["error_code"], answer["accepted"], answer["rejected"]) == ("validation_error", 0, 1)
    assert answer["errors"] == [{"index": 0, "field": field, "message": message}]
    assert buffer.pending() == 0


def test_non_finite_numbers_are_rejected(post_metrics, key_factory):
    metrics = '[{"type": "custom", "value": -1e999}, {"type": "custom", "value": 1e999}]'
    raw = f'{{"service": "registry", "metrics": {metrics}}}'

    response = post_metrics(raw, key_factory())

    assert response.status_code == 422
    assert [e["message"] for e in response.json()["errors"]] == ["`value` must be a finite number."] * 2


def test_nan_is_not_json(post_metrics, key_factory):
    raw = '{"service": "registry", "metrics": [{"type": "custom", "value": NaN}]}'

    response = post_metrics(raw, key_factory())

    assert response.status_code == 400
    assert response.json()["detail"] == "The body is not valid JSON."


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ([], "body", "The body must be a JSON object with `service`, `version` and `metrics`."),
        ({"service": "registry"}, "metrics", "`metrics` must be a non-empty list."),
        ({"service": "registry", "metrics": []}, "metrics", "`metrics` must be a non-empty list."),
        (
            {"service": "someone-else", "metrics": [metric()]},
            "service",
            "This API key belongs to the service 'registry'.",
        ),
        (
            {"service": "registry", "version": 5, "metrics": [metric()]},
            "version",
            "`version` must be a string of at most 50 characters.",
        ),
    ],
)
def test_an_unusable_batch_is_422_as_a_whole(post_metrics, key_factory, body, field, message):
    response = post_metrics(body, key_factory())

    assert response.status_code == 422
    assert response.json()["errors"] == [{"index": None, "field": field, "message": message}]


def test_more_metrics_than_a_batch_holds_is_422(post_metrics, key_factory, settings):
    settings.METRICS_MAX_BATCH = 3

    response = post_metrics(batch(*[metric()] * 4), key_factory())

    assert response.status_code == 422
    assert response.json()["rejected"] == 4
    assert response.json()["errors"][0]["message"] == "A batch holds at most 3 metrics."


def test_a_body_over_the_limit_is_413_and_bad_json_400(asgi_request, post_metrics, key_factory, settings):
    settings.METRICS_MAX_BODY_BYTES = 1000
    key = key_factory()

    too_big = asgi_request(
        "metrics", "POST", "/metrics", json=batch(*[metric()] * 20), headers={"X-API-Key": key}
    )
    not_json = post_metrics("{nope", key)

    assert too_big.status_code == 413
    assert too_big.json()["error_code"] == "payload_too_large"
    assert too_big.json()["detail"] == "The request body is larger than 1000 bytes."
    assert buffer.pending() == 0
    assert not_json.status_code == 400
    assert not_json.json()["detail"] == "The body is not valid JSON."


def test_missing_unknown_and_revoked_keys_are_401(post_metrics, key_factory):
    key = key_factory()
    api_key_revoke(actor=None, key=ApiKey.objects.get(service="registry"))

    missing = post_metrics(batch(metric()))
    unknown = post_metrics(batch(metric()), "mk_not-a-key")
    revoked = post_metrics(batch(metric()), key)

    assert [r.status_code for r in (missing, unknown, revoked)] == [401, 401, 401]
    assert missing.json()["error_code"] == "not_authenticated"
    assert unknown.json()["detail"] == "Unknown or revoked API key."
    assert revoked.json()["error_code"] == "authentication_failed"
    assert missing["WWW-Authenticate"] == "X-API-Key"
    assert buffer.pending() == 0


def test_every_keyed_answer_carries_rate_limit_headers_and_the_limit_is_enforced(post_metrics, key_factory):
    key = key_factory(rate_limit=3)

    answers = [post_metrics(batch(metric()), key) for _ in range(4)]

    assert [a.status_code for a in answers] == [202, 202, 202, 429]
    assert [a["X-RateLimit-Remaining"] for a in answers] == ["2", "1", "0", "0"]
    assert all(a["X-RateLimit-Limit"] == "3" for a in answers)
    assert answers[3]["Retry-After"] == "20"
    assert answers[3].json()["error_code"] == "throttled"
    assert buffer.pending() == 3


def test_the_default_limit_comes_from_the_setting(post_metrics, key_factory, settings):
    settings.METRICS_RATE_LIMIT = 7

    response = post_metrics(batch(metric()), key_factory())

    assert (response["X-RateLimit-Limit"], response["X-RateLimit-Remaining"]) == ("7", "6")


def test_rate_limit_reports_the_bucket_without_taking_a_token(
    client, metrics_urls, post_metrics, key_factory
):
    key = key_factory(rate_limit=10)
    post_metrics(batch(metric()), key)

    first = client.get("/rate-limit", HTTP_X_API_KEY=key)
    second = client.get("/rate-limit", HTTP_X_API_KEY=key)

    assert first.status_code == 200
    assert first.json() == {"service": "registry", "limit_per_minute": 10, "remaining": 9, "reset_seconds": 6}
    assert second.json()["remaining"] == 9
    assert second["X-RateLimit-Remaining"] == "9"
    assert client.get("/rate-limit").status_code == 401


def test_the_metrics_port_serves_only_its_own_routes(client, metrics_urls):
    assert client.get("/health").status_code == 200
    missing = client.get("/v0.1/servers")
    assert missing.status_code == 404
    assert missing.json()["error_code"] == "not_found"


def test_the_registry_port_does_not_serve_the_metrics_api(client, key_factory):
    response = client.post("/rate-limit", HTTP_X_API_KEY=key_factory())

    assert response.status_code == 404


def test_a_flush_stores_each_metric_once_even_when_run_twice_on_the_same_hand_off(post_metrics, key_factory):
    post_metrics(batch(metric(), metric()), key_factory())
    name = buffer.take(10)
    records = buffer.records_of(name)

    rows_store(records)
    rows_store(records)  # a flusher that died after its commit, recovered by the next one
    buffer.release(name)

    assert AuthMetric.objects.count() == 2
    assert sorted(
        str(pk).replace("-", "") for pk in AuthMetric.objects.values_list("id", flat=True)
    ) == sorted(r["id"] for r in records)


def test_a_hand_off_left_by_a_dead_flusher_is_stored_after_its_lease(post_metrics, key_factory):
    post_metrics(batch(metric(), metric(), metric()), key_factory())
    name = buffer.take(10, lease_seconds=60)  # a flusher took it, then died

    assert metrics_flush() == 0  # its lease still runs: not someone else's yet
    assert AuthMetric.objects.count() == 0

    buffer.sync_client().zadd(buffer.LEASES, {name: 0})  # its lease has passed
    recovered = metrics_flush()

    assert recovered == 3
    assert AuthMetric.objects.count() == 3
    assert buffer.sync_client().exists(name) == 0
    assert buffer.sync_client().zcard(buffer.LEASES) == 0


def test_a_body_of_another_content_type_is_415(client, metrics_urls, key_factory):
    response = client.post(
        "/metrics", json.dumps(batch(metric())), content_type="text/plain", HTTP_X_API_KEY=key_factory()
    )

    assert response.status_code == 415
    assert response.json()["error_code"] == "unsupported_media_type"
    assert buffer.pending() == 0


def test_metrics_refused_while_redis_is_down_are_a_json_503(post_metrics, key_factory, redis_down):
    key = key_factory()

    response = post_metrics({"service": "registry", "metrics": [metric()]}, key)

    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response.json() == {
        "detail": "Redis is unavailable; retry shortly.",
        "error_code": "redis_unavailable",
        "request_id": response["X-Request-ID"],
    }


def test_a_batch_sent_again_with_its_metric_ids_is_stored_once(post_metrics, key_factory):
    key = key_factory()
    body = batch(
        metric("custom", id="6f1c1e4e-3b0a-4c55-9d7e-0b8c2f1a9e10"),
        metric("custom", id="0b8c2f1a-9e10-4c55-9d7e-6f1c1e4e3b0a"),
    )

    first, again = post_metrics(body, key), post_metrics(body, key)
    metrics_flush()

    assert (first.status_code, again.status_code) == (202, 202)
    assert GenericMetric.objects.count() == 2


def test_a_metric_id_that_is_not_a_uuid_is_refused(post_metrics, key_factory):
    response = post_metrics(batch(metric("custom", id="retry-1")), key_factory())

    assert response.status_code == 422
    assert response.json()["errors"] == [
        {
            "index": 0,
            "field": "id",
            "message": "`id` must be a UUID (a metric sent again with its id is stored once).",
        }
    ]
