"""ARD's registry API under `/ard` (discovery/ard.py) on the real model and pgvector: ranked entries the
caller may see, validated against the catalog entry of ARD's published AI Catalog schema, filters, pages,
referrals to the mirrored registries, one entry by its identifier, and ARD's error shape."""

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from catalog.models import Upstream
from tests.search import semantic_fixtures
from tests.search.test_unified_search import analyst, registry  # noqa: F401

pytestmark = pytest.mark.django_db

embedding_model = semantic_fixtures.embedding_model
SCHEMA = json.loads((Path(__file__).parent.parent / "data/spec/ard/ai-catalog.schema.json").read_text())
ENTRY = Draft202012Validator({"$ref": "#/$defs/catalogEntry", "$defs": SCHEMA["$defs"]})


def search(client, body, token):
    return client.post(
        "/ard/search", body, content_type="application/json", headers={"Authorization": f"Bearer {token}"}
    )


def test_a_search_ranks_what_the_caller_may_see_with_scores_and_sources(client, registry, analyst):  # noqa: F811
    response = search(client, {"query": {"text": "convert currency"}, "federation": "none"}, analyst)
    results = response.json()["results"]

    assert response.status_code == 200
    identifiers = [r["identifier"] for r in results]
    assert sorted(identifiers[:2]) == ["urn:air:testserver:a2a:currency-agent", "urn:air:testserver:mcp:fx"]
    assert "urn:air:testserver:mcp:secret-fx" not in identifiers  # hidden from this caller
    assert "urn:air:testserver:a2a:private-currency-agent" not in identifiers
    assert "referrals" not in response.json()
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)
    assert all(isinstance(r["score"], int) and 0 <= r["score"] <= 100 for r in results)
    assert {r["source"] for r in results} == {"http://testserver/ard"}
    assert [list(ENTRY.iter_errors(r)) for r in results] == [[] for _ in results]


def test_filters_and_pages(client, registry, analyst):  # noqa: F811
    agents_only = {
        "query": {"text": "convert currency", "filter": {"type": "application/a2a-agent-card+json"}}
    }
    first = search(client, {**agents_only, "pageSize": 1}, analyst).json()
    second = search(client, {**agents_only, "pageSize": 1, "pageToken": first["pageToken"]}, analyst).json()
    tagged = search(client, {"query": {"text": "weather", "filter": {"tags": ["weather"]}}}, analyst).json()

    assert [r["identifier"] for r in first["results"]] == ["urn:air:testserver:a2a:currency-agent"]
    assert [r["identifier"] for r in second["results"]] == ["urn:air:testserver:a2a:poet"]
    assert "pageToken" not in second
    assert [r["identifier"] for r in tagged["results"]] == ["urn:air:testserver:mcp:forecast"]


def test_referrals_name_the_mirrored_registries(client, registry, analyst):  # noqa: F811
    Upstream.objects.create(name="official", url="https://registry.example.org")

    answer = search(client, {"query": {"text": "weather"}, "federation": "referrals"}, analyst).json()

    assert answer["referrals"] == [
        {
            "identifier": "urn:air:registry.example.org:registry:official",
            "displayName": "official",
            "type": "application/ai-registry+json",
            "url": "https://registry.example.org",
        }
    ]


def test_one_entry_by_its_identifier_and_hidden_ones_are_404(client, registry, analyst):  # noqa: F811
    headers = {"Authorization": f"Bearer {analyst}"}
    found = client.get("/ard/agents/urn:air:testserver:a2a:currency-agent", headers=headers)
    hidden = client.get("/ard/agents/urn:air:testserver:mcp:secret-fx", headers=headers)

    assert (found.status_code, found.json()["displayName"]) == (200, "Currency Agent")
    assert list(ENTRY.iter_errors(found.json())) == []
    assert (hidden.status_code, hidden.json()) == (
        404,
        {"errorCode": "NOT_FOUND", "message": "No entry urn:air:testserver:mcp:secret-fx here."},
    )


@pytest.mark.parametrize(
    "body, message",
    [
        ({}, 'A search is {"query": {"text": ...}}.'),
        ({"query": {}}, "query.text is required: 1 to 1000 characters."),
        ({"query": {"text": "x"}, "pageSize": 0}, "pageSize is 1 to 100."),
        ({"query": {"text": "x"}, "federation": "everywhere"}, "federation is one of auto, referrals, none."),
        (
            {"query": {"text": "x", "filter": {"owner": "me"}}},
            "Filtering on owner is not supported here; use one of type, tags, publisher, identifier, "
            "version.",
        ),
        ({"query": {"text": "x"}, "pageToken": "!!"}, "pageToken is not one this registry gave."),
        ({"query": {"text": "x"}, "limit": 3}, "Unknown member: limit."),
    ],
)
def test_bad_requests_are_400_in_ards_error_shape(client, analyst, body, message):  # noqa: F811
    response = search(client, body, analyst)

    assert (response.status_code, response.json()) == (
        400,
        {"errorCode": "INVALID_ARGUMENT", "message": message},
    )


def test_explore_is_501_and_the_catalog_names_the_search_service(client, analyst):  # noqa: F811
    explore = client.post("/ard/explore", {}, content_type="application/json")
    catalog = client.get("/.well-known/ai-catalog.json", headers={"Authorization": f"Bearer {analyst}"})

    assert explore.status_code == 501
    assert json.loads(catalog.content)["entries"][-1]["url"] == "http://testserver/ard"
