"""The AI Catalog at `/.well-known/ai-catalog.json`: checked against the required members the AI Catalog
specification's text names and against the schema ARD publishes for it, per the caller's rights, each
server entry's URL serving its Server Card, ETag revalidation."""

import json
import re
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from tests.factories import AgentFactory, ServerFactory
from virtual_servers.services import virtual_server_create

pytestmark = pytest.mark.django_db

ARD_CATALOG = Draft202012Validator(
    json.loads((Path(__file__).parent.parent / "data/spec/ard/ai-catalog.schema.json").read_text()),
    format_checker=Draft202012Validator.FORMAT_CHECKER,
)


def problems(catalog: dict) -> list[str]:
    """What the AI Catalog spec (1.0) requires and the document lacks."""
    found = []
    if not re.fullmatch(r"\d+\.\d+", str(catalog.get("specVersion"))):
        found.append("specVersion is Major.Minor")
    if not isinstance(catalog.get("entries"), list):
        return [*found, "entries is an array"]
    if "host" in catalog and not isinstance(catalog["host"].get("displayName"), str):
        found.append("host.displayName")
    seen = set()
    for entry in catalog["entries"]:
        for member in ("identifier", "displayName", "mediaType"):
            if not isinstance(entry.get(member), str) or not entry[member]:
                found.append(f"{entry.get('identifier')}: {member}")
        if ("url" in entry) == ("data" in entry):
            found.append(f"{entry.get('identifier')}: exactly one of url and data")
        key = (entry.get("identifier"), entry.get("version"))
        if key in seen:
            found.append(f"{key} is not unique")
        seen.add(key)
    return found


@pytest.fixture
def world(member, scope_factory, token_for):
    ServerFactory(path="/weather", name="Weather", is_enabled=True)
    ServerFactory(path="/payroll", name="Payroll", is_enabled=True)
    virtual_server_create(
        actor=None, path="/team", definition={"name": "Team", "members": [{"server": "/weather"}]}
    )
    AgentFactory(path="/echo", name="Echo", visibility="public", is_enabled=True)
    AgentFactory(path="/secret", name="Secret", visibility="private", is_enabled=True)
    rules = [{"server": "/weather", "methods": ["*"]}, {"server": "/team", "methods": ["*"]}]
    scope_factory("readers", group="readers", server_rules=rules)
    return token_for(member("vera", "readers"))


def test_the_catalog_lists_what_the_caller_may_see_and_meets_the_spec(client, world):
    response = client.get("/.well-known/ai-catalog.json", headers={"Authorization": f"Bearer {world}"})
    catalog = json.loads(response.content)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/ai-catalog+json"
    assert response["Cache-Control"] == "private, max-age=300"
    assert problems(catalog) == []
    assert [error.message for error in ARD_CATALOG.iter_errors(catalog)] == []
    assert [(e["identifier"], e["mediaType"], e["url"]) for e in catalog["entries"]] == [
        (
            "urn:air:testserver:mcp:weather",
            "application/mcp-server-card+json",
            "http://testserver/weather/mcp/server-card",
        ),
        (
            "urn:air:testserver:mcp:team",
            "application/mcp-server-card+json",
            "http://testserver/team/mcp/server-card",
        ),
        (
            "urn:air:testserver:a2a:echo",
            "application/a2a-agent-card+json",
            "http://testserver/echo/a2a/.well-known/agent-card.json",
        ),
        ("urn:air:testserver:registry:search", "application/ai-registry+json", "http://testserver/ard"),
    ]
    card = client.get("/weather/mcp/server-card", headers={"Authorization": f"Bearer {world}"})
    assert (card.status_code, json.loads(card.content)["name"]) == (200, "io.mcpgateway/weather")


def test_an_anonymous_caller_sees_public_agents_only_without_the_public_listing(client, world):
    response = client.get("/.well-known/ai-catalog.json")

    assert response["Cache-Control"] == "public, max-age=300"
    assert [e["identifier"] for e in json.loads(response.content)["entries"]] == [
        "urn:air:testserver:a2a:echo",
        "urn:air:testserver:registry:search",
    ]


def test_the_etag_answers_304(client, world):
    headers = {"Authorization": f"Bearer {world}"}
    first = client.get("/.well-known/ai-catalog.json", headers=headers)
    again = client.get("/.well-known/ai-catalog.json", headers={**headers, "If-None-Match": first["ETag"]})

    assert (again.status_code, again.content) == (304, b"")


def test_the_ard_manifest_location_serves_the_same_catalog(client, world):
    headers = {"Authorization": f"Bearer {world}"}
    catalog = client.get("/.well-known/ai-catalog.json", headers=headers)
    ard = client.get("/.well-known/ard.json", headers=headers)

    assert (ard.status_code, ard["Content-Type"], ard.content) == (
        200,
        "application/ai-catalog+json",
        catalog.content,
    )


def test_agent_entries_carry_two_to_five_representative_queries_from_their_skills_and_description(
    client, world
):
    AgentFactory(
        path="/planner",
        name="Planner",
        description="Plans trips. Books hotels and flights!",
        visibility="public",
        is_enabled=True,
        skills=[
            {
                "id": "plan",
                "name": "plan",
                "description": "Plan a trip",
                "examples": ["Plan 3 days in Rome", 7],
            },
            {"id": "book", "name": "book", "description": "Book a  hotel\nroom", "examples": "not a list"},
            "not a skill",
        ],
    )
    AgentFactory(path="/bare", name="Bare", description="", skills=[], visibility="public", is_enabled=True)

    for location in ("/.well-known/ai-catalog.json", "/.well-known/ard.json"):
        catalog = json.loads(client.get(location).content)
        queries = {e["identifier"]: e.get("representativeQueries") for e in catalog["entries"]}

        assert queries["urn:air:testserver:a2a:planner"] == [
            "Plan 3 days in Rome",
            "Plan a trip",
            "Book a hotel room",
            "Plans trips.",
            "Books hotels and flights!",
        ]
        assert queries["urn:air:testserver:a2a:echo"] == ["Summarize text", "A test A2A agent", "Echo"]
        assert queries["urn:air:testserver:a2a:bare"] == ["Bare", "Bare agent"]
        assert [error.message for error in ARD_CATALOG.iter_errors(catalog)] == []
