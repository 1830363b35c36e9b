"""The agents page (/agents): the caller's agents with skills, enable/disable for those allowed, and the
unified semantic search with scores, on the real model and pgvector."""

import re

import pytest

from accounts.models import AuditEvent
from agents.models import Agent
from tests.agents import semantic_fixtures
from tests.agents.test_unified_search import registry  # noqa: F401

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


def test_the_page_lists_the_agents_the_caller_sees_with_their_skills(analyst, registry):  # noqa: F811
    response = analyst.get("/agents")

    assert response.status_code == 200
    rows = re.findall(r'<tr class="agent-row[^"]*" id="agent([^"]+)" data-path="\1">', page(response))
    assert rows == ["/currency-agent", "/poet"]  # the private agent is not the analyst's
    assert "<li>summarize</li>" in page(response)
    assert 'aria-label="Disable Poet"' in page(response)
    assert 'aria-label="Disable Currency Agent"' not in page(response)  # no toggle_agent there


def test_the_search_finds_tools_agents_and_servers_with_their_scores(analyst, registry):  # noqa: F811
    response = analyst.get("/agents", {"q": "convert currency"})

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
        ("/?query=%2Ffx", "convert_currency"),
        ("/agents#agent/currency-agent", "Currency Agent"),
    ]
    assert ("/?query=%2Ffx", "Exchange Rates") in links(response)


def test_the_page_lists_no_weak_match(analyst, registry, settings):  # noqa: F811
    every = analyst.get("/agents", {"q": "x"})
    settings.SEARCH_PAGE_MIN_SCORE = 0.0
    unfiltered = analyst.get("/agents", {"q": "x"})

    assert hits(every) == []
    assert "Nothing you can see matches “x”." in page(every)
    assert len(hits(unfiltered)) > 0 and max(scores(unfiltered)) < 0.3


def test_a_user_without_scopes_finds_public_agents_only(member, client, registry):  # noqa: F811
    client.force_login(member("nobody"))

    response = client.get("/agents", {"q": "convert currency"})

    assert hits(response) == [("a2a_agent", "/currency-agent", "Currency Agent")]  # Poet: too weak a match


def test_searches_share_the_apis_rate_limit(analyst, registry, settings):  # noqa: F811
    settings.SEMANTIC_SEARCH_RATE_PER_MINUTE = 1
    analyst.post("/api/search/semantic", {"query": "weather"}, content_type="application/json")

    response = analyst.get("/agents", {"q": "weather"})

    assert response.status_code == 429
    assert '<p class="error" role="alert">Too many searches; try again in a minute.</p>' in page(response)


def test_a_query_too_long_is_refused_before_the_model_runs(analyst):
    response = analyst.get("/agents", {"q": "x" * 1001})

    assert response.status_code == 400
    assert '<p class="error" role="alert">Ask in at most 1000 characters.</p>' in page(response)


def test_the_toggle_button_enables_and_disables(analyst, registry):  # noqa: F811
    response = analyst.post("/agents/poet/toggle", {"enabled": "off"})

    assert (response.status_code, response["Location"]) == (303, "/agents")
    assert Agent.objects.get(path="/poet").is_enabled is False
    assert AuditEvent.objects.filter(target="agent:/poet").count() == 1
    analyst.post("/agents/poet/toggle", {"enabled": "on"})
    assert Agent.objects.get(path="/poet").is_enabled is True


@pytest.mark.parametrize(
    ("url", "status", "message"),
    [
        (
            "/agents/currency-agent/toggle",
            403,
            "You may not enable or disable /currency-agent: it needs toggle_agent.",
        ),
        ("/agents/private-currency-agent/toggle", 404, "No agent is registered at /private-currency-agent."),
    ],
)
def test_toggle_refusals(analyst, registry, url, status, message):  # noqa: F811
    response = analyst.post(url, {"enabled": "off"})

    assert response.status_code == status
    assert f'<p class="error" role="alert">{message}</p>' in page(response)
    assert Agent.objects.filter(is_enabled=False).count() == 0


def test_the_page_needs_a_login(client):
    response = client.get("/agents?q=time")

    assert (response.status_code, response["Location"]) == (302, "/login?next=%2Fagents%3Fq%3Dtime")
