"""MCP Server Cards at `<gateway MCP URL>/server-card`, validated against the server-card extension's
published schema (tests/data/spec/server-card/schema.json): for a server and a virtual server the caller
may see, 404 for one it may not, ETag revalidation, the media type, caching and CORS headers."""

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from tests.factories import ServerFactory
from virtual_servers.services import virtual_server_create

SCHEMA = json.loads((Path(__file__).parent.parent / "data/spec/server-card/schema.json").read_text())
CARD = Draft202012Validator(
    {"$ref": "#/$defs/ServerCard", "$defs": SCHEMA["$defs"]},
    format_checker=Draft202012Validator.FORMAT_CHECKER,
)


@pytest.fixture
def weather(db):
    return ServerFactory(
        path="/weather", name="Weather", description="Forecasts for any city. " * 10, version="2.1.0"
    )


@pytest.fixture
def viewer(weather, member, scope_factory, token_for):
    scope_factory("weather-readers", group="readers", server_rules=[{"server": "/weather", "methods": ["*"]}])
    return token_for(member("vera", "readers"))


def get(client, path: str, token: str, **headers):
    return client.get(path, headers={"Authorization": f"Bearer {token}", **headers})


def test_a_servers_card_validates_and_points_at_the_gateway(client, weather, viewer):
    response = get(client, "/weather/mcp/server-card", viewer)

    card = json.loads(response.content)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/mcp-server-card+json"
    assert list(CARD.iter_errors(card)) == []
    assert (card["name"], card["version"], card["title"]) == ("io.mcpgateway/weather", "2.1.0", "Weather")
    assert card["description"] == ("Forecasts for any city. " * 10)[:100]
    assert card["remotes"] == [
        {
            "type": "streamable-http",
            "url": "http://testserver/weather/mcp",
            "supportedProtocolVersions": ["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"],
        }
    ]
    assert response["Cache-Control"] == "private, max-age=300"
    assert response["Access-Control-Allow-Origin"] == "*"


def test_the_etag_answers_304_and_changes_with_the_server(client, weather, viewer):
    first = get(client, "/weather/mcp/server-card", viewer)
    again = get(client, "/weather/mcp/server-card", viewer, **{"If-None-Match": first["ETag"]})
    weather.version = "2.2.0"
    weather.save()
    changed = get(client, "/weather/mcp/server-card", viewer, **{"If-None-Match": first["ETag"]})

    assert (again.status_code, again.content) == (304, b"")
    assert changed.status_code == 200
    assert changed["ETag"] != first["ETag"]


def test_a_server_the_caller_may_not_see_is_404_like_one_that_does_not_exist(client, weather, viewer):
    ServerFactory(path="/payroll")

    hidden = get(client, "/payroll/mcp/server-card", viewer)
    missing = get(client, "/nowhere/mcp/server-card", viewer)

    assert (hidden.status_code, hidden.json()["detail"]) == (404, "No MCP server at /payroll.")
    assert (missing.status_code, missing.json()["detail"]) == (404, "No MCP server at /nowhere.")


def test_a_virtual_servers_card_validates(client, weather, member, scope_factory, token_for):
    virtual_server_create(
        actor=None,
        path="/team",
        definition={
            "name": "Team tools",
            "description": "What the team uses.",
            "members": [{"server": "/weather"}],
        },
    )
    scope_factory("team", group="team", server_rules=[{"server": "/team", "methods": ["*"]}])
    token = token_for(member("tina", "team"))

    card = json.loads(get(client, "/team/mcp/server-card", token).content)

    assert list(CARD.iter_errors(card)) == []
    assert (card["title"], card["description"]) == ("Team tools", "What the team uses.")
    assert card["remotes"][0]["url"] == "http://testserver/team/mcp"
    assert card["_meta"]["io.mcpgateway/internal"]["virtual"] is True


@pytest.mark.parametrize(
    "accept", ["application/mcp-server-card+json", "application/json", "*/*", "text/plain"]
)
def test_the_card_is_served_whatever_media_type_is_accepted(client, weather, viewer, accept):
    response = get(client, "/weather/mcp/server-card", viewer, Accept=accept)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/mcp-server-card+json"
    assert json.loads(response.content)["name"] == "io.mcpgateway/weather"


def test_without_a_token_a_card_is_404_whether_the_server_exists_or_not(client, weather, settings):
    settings.PUBLIC_LISTING = False

    existing = client.get("/weather/mcp/server-card", headers={"Accept": "application/mcp-server-card+json"})
    missing = client.get("/nowhere/mcp/server-card")

    assert (existing.status_code, existing.json()["detail"]) == (404, "No MCP server at /weather.")
    assert (missing.status_code, missing.json()["detail"]) == (404, "No MCP server at /nowhere.")


def test_a_cross_origin_browser_may_fetch_a_card_with_a_token(client, weather, viewer):
    preflight = client.options(
        "/weather/mcp/server-card",
        headers={
            "Origin": "https://app.example",
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "authorization",
        },
    )
    card = get(client, "/weather/mcp/server-card", viewer, Origin="https://app.example")

    assert preflight.status_code == 204
    assert preflight["Access-Control-Allow-Origin"] == "*"
    assert preflight["Access-Control-Allow-Methods"] == "GET"
    assert "Authorization" in preflight["Access-Control-Allow-Headers"].split(", ")
    assert (card.status_code, card["Access-Control-Allow-Origin"]) == (200, "*")
