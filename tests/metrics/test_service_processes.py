"""The metrics service as real daphne processes on its own ASGI entry: two ingestion processes share one
rate-limit bucket (in Redis), and a batch posted to either is stored by the flush."""

import subprocess

import pytest
import requests

from metrics.models import AuthMetric
from metrics.services import api_key_create, metrics_flush
from tests.metrics.conftest import metric
from tests.processes import free_ports, start, wait_healthy

pytestmark = [pytest.mark.stack, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def two_services(tmp_path):
    ports = free_ports(2)
    logs = [(tmp_path / f"metrics{index}.log").open("w") for index in range(2)]
    processes = [
        start("daphne", "-b", "127.0.0.1", "-p", str(port), "registry_site.metrics_asgi:application", log=log)
        for port, log in zip(ports, logs, strict=True)
    ]
    try:
        for port, process in zip(ports, processes, strict=True):
            wait_healthy(port, process)
        yield ports
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
        for log in logs:
            log.close()


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
