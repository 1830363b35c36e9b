"""Poison metrics: a metric the columns cannot hold is rejected at ingestion (422 for it, 202 for the
others), never accepted and lost; a row the database refuses anyway is dead-lettered by the flush while
every other metric of the hand-off is stored; the service answers JSON for every hostile body."""

import json
import uuid

import pytest

from metrics import buffer
from metrics.models import AuthMetric, DiscoveryMetric, GenericMetric, ToolExecutionMetric
from metrics.services import metrics_flush
from tests.metrics.conftest import metric

pytestmark = pytest.mark.django_db

HUGE = 10**400


def batch(*metrics):
    return {"service": "registry", "version": "1.0.0", "metrics": list(metrics)}


def auth(**dims):
    return metric("auth_request", dimensions={"success": True, "method": "jwt", **dims})


POISON = [
    (auth(server="/" + "s" * 255), "dimensions.server", "`server` must be at most 255 characters."),
    (auth(user_hash="h" * 129), "dimensions.user_hash", "`user_hash` must be at most 128 characters."),
    (
        metric("tool_discovery", dimensions={"query": "q", "results_count": 2**31}),
        "dimensions.results_count",
        "`results_count` must be at most 2147483647.",
    ),
    (
        metric(
            "tool_execution", dimensions={"method": "tools/call", "success": True, "input_size_bytes": 2**63}
        ),
        "dimensions.input_size_bytes",
        "`input_size_bytes` must be at most 9223372036854775807.",
    ),
    (auth(server="/a\x00b"), "dimensions.server", "NUL characters are not allowed."),
    (
        auth(user_hash="\ud800"),
        "dimensions.user_hash",
        "Text must be valid Unicode (a lone surrogate was found).",
    ),
    (metric("custom", value=HUGE), "value", "`value` must be a finite number."),
    (metric("custom", duration_ms=HUGE), "duration_ms", "`duration_ms` must be a finite number."),
    (metric("custom", timestamp=HUGE), "timestamp", "`timestamp` must be a finite number."),
    ({**metric("custom"), "type": ["custom"]}, "type", None),
    (metric("custom", metadata={"k\x00": 1}), "metadata.k\\x00", "NUL characters are not allowed."),
]


def test_poison_is_rejected_per_metric_and_every_valid_metric_is_stored(post_metrics, key_factory):
    valid = [auth(server="/weather"), metric("tool_execution"), metric("tool_discovery"), metric("custom")]
    mixed = [item for pair in zip(valid * 3, [p[0] for p in POISON], strict=False) for item in pair]
    raw = json.dumps(batch(*mixed), ensure_ascii=True)

    response = post_metrics(raw, key_factory())
    stored = metrics_flush()

    assert response.status_code == 202
    body = response.json()
    assert body["accepted"] == len(mixed) - len(POISON)
    assert body["rejected"] == len(POISON)
    assert [(e["index"] % 2, e["field"]) for e in body["errors"]] == [(1, p[1]) for p in POISON]
    assert [e["message"] for e in body["errors"] if POISON[e["index"] // 2][2]] == [
        p[2] for p in POISON if p[2]
    ]
    assert stored == body["accepted"]
    total = sum(m.objects.count() for m in (AuthMetric, ToolExecutionMetric, DiscoveryMetric, GenericMetric))
    assert total == body["accepted"]


def test_a_batch_of_only_poison_is_422_and_stores_nothing(post_metrics, key_factory):
    response = post_metrics(json.dumps(batch(*[p[0] for p in POISON]), ensure_ascii=True), key_factory())

    assert response.status_code == 422
    assert response.json()["accepted"] == 0
    assert buffer.pending() == 0


def test_a_version_longer_than_its_column_is_422(post_metrics, key_factory):
    response = post_metrics({**batch(metric()), "version": "v" * 51}, key_factory())

    assert response.status_code == 422
    assert buffer.pending() == 0


def stored_record(**dims):
    """A buffered record as ingestion writes it, bypassing validation (as an older version might have)."""
    return {
        "id": uuid.uuid4().hex,
        "service": "registry",
        "version": "1",
        "type": "auth_request",
        "value": 1.0,
        "duration_ms": 1.0,
        "timestamp": 1_700_000_000.0,
        "dimensions": {"success": True, "method": "jwt", "server": "/w", "user_hash": "", **dims},
        "metadata": {},
    }


def test_a_row_the_database_refuses_is_dead_lettered_and_the_rest_of_the_hand_off_is_stored():
    good = [stored_record() for _ in range(5)]
    poison = stored_record(server="s" * 300)
    buffer.push(good[:2] + [poison] + good[2:])
    dead_before, _ = buffer.dead_letters()

    stored = metrics_flush()
    again = metrics_flush()

    assert stored == 5
    assert again == 0
    assert set(AuthMetric.objects.values_list("id", flat=True)) == {uuid.UUID(r["id"]) for r in good}
    count, letters = buffer.dead_letters()
    assert count == dead_before + 1
    assert letters[0]["record"]["id"] == poison["id"]
    assert "value too long" in letters[0]["reason"]
    assert buffer.pending() == 0


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ("[" * 5000 + "]" * 5000, 400),
        ('{"service": "registry", "metrics": [{"type": "custom", "value": ' + "9" * 400 + "}]}", 422),
        (b"\xff\xfe not utf-8", 400),
    ],
)
def test_hostile_bodies_get_json_answers(post_metrics, key_factory, body, status):
    response = post_metrics(body, key_factory())

    assert response.status_code == status
    assert response["Content-Type"] == "application/json"
