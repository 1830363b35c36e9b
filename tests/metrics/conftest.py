"""Callers of the metrics service: its own URLs (as its ASGI entry routes them) and keys."""

import pytest

from metrics.services import api_key_create


@pytest.fixture
def metrics_urls(settings):
    """Route the test client with the metrics service's URLs."""
    settings.ROOT_URLCONF = "registry_site.metrics_urls"


@pytest.fixture
def key_factory(db):
    """A key for `service`; returns the raw key."""

    def make(service="registry", **fields):
        return api_key_create(actor=None, service=service, **fields)[1]

    return make


@pytest.fixture
def post_metrics(client, metrics_urls):
    """POST a JSON body to /metrics with a key."""

    def post(body, key=None, **headers):
        if key is not None:
            headers["HTTP_X_API_KEY"] = key
        return client.post("/metrics", body, content_type="application/json", **headers)

    return post


def metric(kind="auth_request", **fields):
    """A valid metric of `kind` (override any field)."""
    dimensions = {
        "auth_request": {"success": True, "method": "jwt", "server": "/weather", "user_hash": "ab12"},
        "tool_execution": {
            "method": "tools/call",
            "tool_name": "forecast",
            "client_name": "c",
            "success": True,
        },
        "tool_discovery": {"query": "weather", "results_count": 3, "top_k": 5},
        "protocol_latency": {"flow_step": "discovery"},
    }.get(kind, {"operation": "register"})
    return {"type": kind, "value": 1, "duration_ms": 12.5, "dimensions": dimensions, **fields}
