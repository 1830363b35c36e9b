"""The search page (/search): agents, servers, tools and catalog entries found by meaning, with scores
and links, on the real model and pgvector."""

import re

import pytest

from tests.search import semantic_fixtures
from tests.search.test_unified_search import registry  # noqa: F401

pytestmark = pytest.mark.django_db

embedding_model = semantic_fixtures.embedding_model


@pytest.fixture
def analyst(client, member, scope_factory):
    """Sees /fx, /forecast and /old-fx (not /secret-fx) and may enable or disable /poet."""
    scope_factory(
        "analysts",
        group="analysts",
        ui={"list_service": ["/fx", "/forecast", "/old-fx"], "toggle_agent": ["/poet"]},
    )
    client.force_login(member("ana", "analysts"))
    return client


def page(response) -> str:
    return response.content.decode()


def hits(response) -> list[tuple[str, str, str]]:
    hit = (
        r'<li class="hit" data-entity-type="([^"]+)" data-path="([^"]+)">'
        r'.*?<strong class="hit-name"><a href="[^"]+">([^<]+)</a></strong>'
    )
    found = re.findall(hit, page(response), re.S)
    return [tuple(hit) for hit in found]


def links(response) -> list[tuple[str, str]]:
    return re.findall(r'<strong class="hit-name"><a href="([^"]+)">([^<]+)</a>', page(response))


def scores(response) -> list[float]:
    return [float(score) for score in re.findall(r'data-score="([0-9.]+)"', page(response))]


def test_the_search_finds_tools_agents_and_servers_with_their_scores(analyst, registry):  # noqa: F811
    response = analyst.get("/search", {"q": "convert currency"})

    assert response.status_code == 200
    assert hits(response)[:2] == [
        ("tool", "/fx", "convert_currency"),
        ("a2a_agent", "/currency-agent", "Currency Agent"),
    ]
    assert ("mcp_server", "/fx", "Exchange Rates") in hits(response)
    assert all(path != "/secret-fx" for _, path, _ in hits(response))
    assert scores(response) == sorted(scores(response), reverse=True)
    assert 0.3 <= scores(response)[-1] < scores(response)[0] <= 1  # SEARCH_PAGE_MIN_SCORE: nothing weaker
    assert links(response)[:2] == [
        ("/servers/fx#tool-convert_currency", "convert_currency"),
        ("/agents#agent/currency-agent", "Currency Agent"),
    ]
    assert ("/servers/fx", "Exchange Rates") in links(response)


def test_when_nothing_is_close_the_closest_matches_are_shown_marked_weak(analyst, registry, settings):  # noqa: F811
    weak = analyst.get("/search", {"q": "x"})
    settings.SEARCH_PAGE_MIN_SCORE = 0.0
    unfiltered = analyst.get("/search", {"q": "x"})

    assert hits(weak) == hits(unfiltered)[:5] and len(hits(weak)) == 5
    assert max(scores(weak)) < 0.3
    assert "Nothing you can see matches “x” closely (a score of 0.30 or more)." in page(weak)
    assert page(weak).count("data-weak>weak match</span>") == 5
    assert "data-weak" not in page(unfiltered)


def test_weak_matches_stay_hidden_when_a_close_one_exists(analyst, registry):  # noqa: F811
    response = analyst.get("/search", {"q": "convert currency"})

    assert min(scores(response)) >= 0.3
    assert "data-weak" not in page(response)


def test_a_search_that_matches_nothing_at_all_says_so(member, client, registry):  # noqa: F811
    client.force_login(member("nobody-at-all"))
    from agents.models import Agent

    Agent.objects.all().delete()

    response = client.get("/search", {"q": "x"})

    assert hits(response) == []
    assert "Nothing you can see matches “x”." in page(response)


def test_a_user_without_scopes_finds_public_agents_only(member, client, registry):  # noqa: F811
    client.force_login(member("nobody"))

    response = client.get("/search", {"q": "convert currency"})

    assert hits(response) == [("a2a_agent", "/currency-agent", "Currency Agent")]  # Poet: too weak a match


def test_searches_share_the_apis_rate_limit(analyst, registry, settings):  # noqa: F811
    settings.SEMANTIC_SEARCH_RATE_PER_MINUTE = 1
    analyst.post("/api/search/semantic", {"query": "weather"}, content_type="application/json")

    response = analyst.get("/search", {"q": "weather"})

    assert response.status_code == 429
    assert '<p class="error" role="alert">Too many searches; try again in a minute.</p>' in page(response)


def test_a_query_too_long_is_refused_before_the_model_runs(analyst):
    response = analyst.get("/search", {"q": "x" * 1001})

    assert response.status_code == 400
    assert '<p class="error" role="alert">Ask in at most 1000 characters.</p>' in page(response)


def test_the_page_without_a_query_shows_the_form_alone(analyst):
    response = analyst.get("/search")

    assert response.status_code == 200
    assert '<form class="search" method="get" action="/search" role="search">' in page(response)
    assert "data-search-results" not in page(response)
    assert '<a href="/search" aria-current="page">Search</a>' in page(response)


def test_the_page_needs_a_login(client):
    response = client.get("/search?q=time")

    assert (response.status_code, response["Location"]) == (302, "/login?next=%2Fsearch%3Fq%3Dtime")
