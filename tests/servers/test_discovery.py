"""GET /.well-known/mcp-servers: public, enabled servers only, real health, cacheable with an ETag."""

import datetime as dt

import pytest

from servers.health import CheckResult
from servers.services import server_health_record
from tests.factories import ServerFactory, ToolFactory

pytestmark = pytest.mark.django_db


def test_the_document_lists_enabled_servers_with_real_health_and_a_tools_preview(client, settings):
    settings.GATEWAY_PUBLIC_URL = "https://gw.example.test"
    checked = dt.datetime(2026, 11, 2, 8, 0, tzinfo=dt.UTC)
    weather = ServerFactory(
        path="/weather",
        name="Weather",
        description="Forecasts",
        tags=["weather"],
        health_status="unhealthy",
        last_checked_at=checked,
        num_tools=7,
    )
    for n in range(7):
        ToolFactory(server=weather, name=f"tool_{n}", description=f"Tool {n}")
    ServerFactory(path="/off", is_enabled=False)

    response = client.get("/.well-known/mcp-servers")

    assert response.status_code == 200
    body = response.json()
    assert body["servers"] == [
        {
            "id": "io.mcpgateway/weather",
            "name": "Weather",
            "description": "Forecasts",
            "path": "/weather",
            "mcp": {"type": "streamable-http", "url": "https://gw.example.test/weather/mcp"},
            "authentication": {
                "required": True,
                "type": "bearer",
                "token_endpoint": "https://gw.example.test/api/auth/token",
            },
            "health_status": "unhealthy",
            "last_checked": "2026-11-02T08:00:00Z",
            "tags": ["weather"],
            "num_tools": 7,
            "tools_preview": [{"name": f"tool_{n}", "description": f"Tool {n}"} for n in range(5)],
        }
    ]
    weather.refresh_from_db()
    assert body["_meta"] == {
        "registry": "mcp-gateway-registry",
        "namespace": "io.mcpgateway",
        "updated_at": weather.updated_at.isoformat().replace("+00:00", "Z"),
    }


def test_it_needs_no_authentication_and_is_publicly_cacheable(client, settings):
    settings.DISCOVERY_CACHE_TTL = 120
    ServerFactory(path="/a")

    response = client.get("/.well-known/mcp-servers")

    assert response.status_code == 200
    assert response["Cache-Control"] == "public, max-age=120"
    assert response["ETag"].startswith('"') and len(response["ETag"]) == 34


def test_the_etag_is_honoured_with_304_and_changes_with_health(client):
    server = ServerFactory(path="/a", health_status="healthy")
    etag = client.get("/.well-known/mcp-servers")["ETag"]

    unchanged = client.get("/.well-known/mcp-servers", headers={"If-None-Match": etag})
    server_health_record(server=server, result=CheckResult("unhealthy", "connection refused"))
    changed = client.get("/.well-known/mcp-servers", headers={"If-None-Match": etag})

    assert unchanged.status_code == 304
    assert unchanged.content == b""
    assert unchanged["ETag"] == etag
    assert changed.status_code == 200
    assert changed["ETag"] != etag
    assert changed.json()["servers"][0]["health_status"] == "unhealthy"


def test_an_empty_registry_is_a_valid_document(client):
    body = client.get("/.well-known/mcp-servers").json()

    assert body["servers"] == []
    assert set(body["_meta"]) == {"registry", "namespace", "updated_at"}


def test_the_document_costs_a_fixed_number_of_queries(client, django_assert_num_queries):
    for n in range(30):
        ToolFactory(server=ServerFactory(path=f"/s{n}"))

    with django_assert_num_queries(3):  # servers, their tools' previews, virtual servers (none here)
        client.get("/.well-known/mcp-servers")


def test_posting_is_not_allowed(client):
    assert client.post("/.well-known/mcp-servers").status_code == 405


def test_the_document_is_built_once_until_a_server_changes(client, django_assert_num_queries):
    from servers.services import server_toggle

    first_server = ServerFactory(path="/weather", name="Weather", is_enabled=True)
    ServerFactory(path="/time", name="Time", is_enabled=True)
    first = client.get("/.well-known/mcp-servers")

    with django_assert_num_queries(0):  # served from this process's cache
        again = client.get("/.well-known/mcp-servers")
    server_toggle(actor=None, server=first_server, enabled=False)
    changed = client.get("/.well-known/mcp-servers")

    assert again.content == first.content
    assert [s["path"] for s in first.json()["servers"]] == ["/time", "/weather"]
    assert [s["path"] for s in changed.json()["servers"]] == ["/time"]
    assert changed["ETag"] != first["ETag"]
