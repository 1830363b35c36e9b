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


def _described(schema: dict, body: dict | None) -> bool:
    """Whether a request or response body names its members (a reference, or properties)."""
    if body is None:
        return False
    shape = body["schema"]
    if "$ref" in shape:
        shape = schema["components"]["schemas"][shape["$ref"].rsplit("/", 1)[1]]
    return bool(shape.get("properties"))


@pytest.mark.parametrize(
    "prefix",
    [
        "/api/limits",
        "/api/quarantines",
        "/api/internal/limits",
        "/api/internal/quarantines",
        "/api/tokens/{jti}",
    ],
)
def test_every_operation_on_limits_quarantines_and_tokens_describes_its_bodies(client, prefix):
    schema = client.get("/api/schema/", {"format": "json"}).json()
    operations = [
        (path, method, operation)
        for path, methods in schema["paths"].items()
        if path.startswith(prefix)
        for method, operation in methods.items()
    ]

    assert operations
    for path, method, operation in operations:
        if "requestBody" in operation:
            content = operation["requestBody"]["content"]
            assert list(content) == ["application/json"], (path, method)
            assert _described(schema, content["application/json"]), (path, method)
        ok = next(status for status in operation["responses"] if status.startswith("2"))
        if ok != "204":
            assert _described(schema, operation["responses"][ok]["content"]["application/json"]), (
                path,
                method,
            )
    limit = schema["paths"][prefix]["post"] if prefix.endswith("limits") else None
    if limit is not None:
        written = schema["components"]["schemas"][
            limit["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
        ]
        assert written["required"] == ["windows"]


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
