"""The metrics service as real uvicorn processes on its own ASGI entry: two ingestion processes share one
rate-limit bucket (in Redis), and a batch posted to either is stored by the flush."""

import pytest
import requests

from metrics.models import AuthMetric
from metrics.services import api_key_create, metrics_flush
from tests.metrics.conftest import metric
from tests.processes import ProcessGroup, free_ports, wait_healthy

pytestmark = [pytest.mark.stack, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def two_services(tmp_path):
    """Two uvicorn processes of the metrics service's ASGI entry; yields their ports."""
    ports = free_ports(2)
    group = ProcessGroup(tmp_path)
    try:
        for n, port in enumerate(ports):
            wait_healthy(port, group.web(f"metrics{n}", port, "registry_site.metrics_asgi:application"))
        yield ports
    finally:
        group.stop()


def test_two_ingestion_processes_share_one_bucket_and_feed_one_store(two_services):
    _, raw = api_key_create(actor=None, service="registry", rate_limit=6)
    body = {"service": "registry", "version": "1", "metrics": [metric()]}

    answers = [
        requests.post(
            f"http://127.0.0.1:{two_services[n % 2]}/metrics",
            json=body,
            headers={"X-API-Key": raw},
            timeout=10,
        )
        for n in range(8)
    ]
    stored = metrics_flush()

    assert [a.status_code for a in answers] == [202] * 6 + [429] * 2
    assert [a.headers["X-RateLimit-Remaining"] for a in answers] == ["5", "4", "3", "2", "1", "0", "0", "0"]
    assert stored == 6
    assert AuthMetric.objects.count() == 6
    not_found = requests.get(f"http://127.0.0.1:{two_services[0]}/v0.1/servers", timeout=10)
    assert (not_found.status_code, not_found.json()["error_code"]) == (404, "not_found")
