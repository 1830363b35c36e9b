"""The published OpenAPI schemas: valid OpenAPI 3, every JSON API of the registry in one and the metrics
service's in its own, security schemes and the one error body named; Swagger UI served from this origin."""

import re

import pytest
import yaml

pytestmark = pytest.mark.django_db


def test_the_registry_schema_describes_every_json_api(client):
    response = client.get("/api/schema/", {"format": "json"})

    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    paths = set(schema["paths"])
    for path in (
        "/v0.1/servers",
        "/api/agents/register",
        "/api/internal/register",
        "/api/tokens/generate",
        "/api/search/semantic",
        "/validate",
        "/api/health/ws/stats",
    ):
        assert path in paths, path
    assert set(schema["components"]["securitySchemes"]) == {"bearer", "session", "internalBasic"}
    register = schema["paths"]["/api/agents/register"]["post"]
    assert register["responses"]["400"]["content"]["application/json"]["schema"]["$ref"].endswith("/Error")
    assert "requestBody" in register


def test_the_metrics_service_publishes_its_own_schema(client, settings):
    settings.ROOT_URLCONF = "registry_site.metrics_urls"

    schema = yaml.safe_load(client.get("/api/schema/").content)

    assert set(schema["paths"]) == {
        "/metrics",
        "/rate-limit",
        "/admin/retention/policies",
        "/admin/retention/cleanup",
    }
    assert schema["components"]["securitySchemes"] == {
        "metricsKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"}
    }


def test_swagger_ui_loads_only_from_this_origin(client):
    page = client.get("/api/docs/")

    assert page.status_code == 200
    html = page.content.decode()
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sources and all(source.startswith("/") for source in sources), sources
    assert "<script>" not in html
