import subprocess
import time

import pytest
import requests
from django.urls import reverse

from runtime.supervisor import asgi_server
from tests.conftest import PROJECT_DIR, clean_env


@pytest.mark.django_db
def test_health_answers_200_when_the_database_answers(client):
    response = client.get(reverse("health"))

    assert response.status_code == 200
    assert response.json() == {"status": "healthy", "service": "mcp-gateway-registry"}
    assert len(response["X-Request-ID"]) == 32


@pytest.mark.django_db
def test_health_echoes_a_well_formed_request_id_and_replaces_a_malformed_one(client):
    kept = client.get(reverse("health"), headers={"X-Request-ID": "lb-probe-000123"})
    replaced = client.get(reverse("health"), headers={"X-Request-ID": "bad id; rm -rf"})

    assert kept["X-Request-ID"] == "lb-probe-000123"
    assert replaced["X-Request-ID"] != "bad id; rm -rf"
    assert len(replaced["X-Request-ID"]) == 32


def test_health_answers_503_with_a_detail_when_the_database_is_unreachable(free_port, settings):
    # A real web server whose DATABASE_URL points at a closed loopback port.
    env = clean_env(
        DATABASE_URL="postgresql://registry@127.0.0.1:1/registry",
        REDIS_URL=settings.REDIS_URL,
        SECRET_KEY="test-secret-key-for-an-unreachable-database",
        JWT_SIGNING_KEY="test-jwt-key-for-an-unreachable-database",
    )
    web = subprocess.Popen(
        asgi_server("registry_site.asgi:application", "127.0.0.1", free_port),
        cwd=PROJECT_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        response = None
        deadline = time.monotonic() + 60
        while response is None and time.monotonic() < deadline:
            try:
                response = requests.get(f"http://127.0.0.1:{free_port}/health", timeout=15)
            except requests.ConnectionError:
                time.sleep(0.2)
        assert response is not None, "the web server did not start"
        body = response.json()
        assert response.status_code == 503
        assert set(body) == {"detail", "error_code", "request_id"}
        assert body["detail"] == "The database is unavailable."
        assert body["error_code"] == "database_unavailable"
        assert body["request_id"] == response.headers["X-Request-ID"]
    finally:
        web.terminate()
        web.wait(10)
