"""Semantic search covers published and mirrored servers: their latest versions, embedded by the sweep."""

import pytest

from catalog.models import ServerVersion
from search.services import versions_embed
from search.texts import version_text
from tests.factories import stored_version

pytestmark = pytest.mark.django_db


@pytest.fixture
def catalog(db):
    stored_version(
        "io.github.acme/weather",
        "2.0.0",
        description="Forecasts, alerts and radar for any city",
        title="Weather",
    )
    stored_version("io.github.acme/weather", "1.0.0", description="Forecasts for any city", latest=False)
    stored_version(
        "com.example/git", "0.3.1", description="Read commits, diffs and branches of a Git repository"
    )
    stored_version(
        "com.example/postgres", "1.2.0", description="Query a PostgreSQL database in plain language"
    )
    stored_version(
        "com.example/old-weather", "0.1.0", description="Weather forecasts, the old way", status="deleted"
    )


def test_only_latest_versions_are_embedded_with_their_text(catalog):
    assert versions_embed() == 4  # the deleted one is the latest of its name; 1.0.0 is not
    weather = ServerVersion.objects.get(name="io.github.acme/weather", version="2.0.0")
    assert (
        version_text(weather) == "io.github.acme/weather\nWeather\nForecasts, alerts and radar for any city"
    )
    assert ServerVersion.objects.get(version="1.0.0").embedding is None


def test_the_unified_search_finds_catalog_entries_but_not_deleted_ones(client, catalog, member, token_for):
    versions_embed()
    token = token_for(member("reader"))

    answer = client.post(
        "/api/search/semantic",
        {
            "query": "what is the weather in Paris tomorrow",
            "entity_types": ["catalog_entry"],
            "max_results": 3,
        },
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )

    results = answer.json()["results"]
    assert [r["name"] for r in results][:1] == ["io.github.acme/weather"]
    assert results[0] | {"relevance_score": 0} == {
        "entity_type": "catalog_entry",
        "relevance_score": 0,
        "name": "io.github.acme/weather",
        "title": "Weather",
        "description": "Forecasts, alerts and radar for any city",
        "version": "2.0.0",
        "status": "active",
    }
    assert "com.example/old-weather" not in [r["name"] for r in results]


def test_anonymous_callers_find_catalog_entries_only_when_the_listing_is_public(client, catalog, settings):
    versions_embed()
    body = {"query": "git commits", "entity_types": ["catalog_entry"]}

    closed = client.post("/api/search/semantic", body, content_type="application/json").json()["results"]
    settings.PUBLIC_LISTING = True
    opened = client.post("/api/search/semantic", body, content_type="application/json").json()["results"]

    assert (closed, opened[0]["name"]) == ([], "com.example/git")


def test_the_search_page_shows_catalog_hits_linked_to_the_catalog(client, catalog, member):
    versions_embed()
    client.force_login(member("reader"))

    page = client.get("/search", {"q": "weather forecasts for my city"})

    assert page.status_code == 200
    assert '<a href="/catalog?q=io.github.acme/weather">io.github.acme/weather</a>' in page.content.decode()
