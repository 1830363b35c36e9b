"""The agents page (/agents): the caller's agents with skills and enable/disable for those allowed."""

import re

import pytest

from accounts.models import AuditEvent
from agents.models import Agent
from tests.search import semantic_fixtures
from tests.search.test_search_page import analyst  # noqa: F401
from tests.search.test_unified_search import registry  # noqa: F401

pytestmark = pytest.mark.django_db

embedding_model = semantic_fixtures.embedding_model


def page(response) -> str:
    return response.content.decode()


def test_the_page_lists_the_agents_the_caller_sees_with_their_skills(analyst, registry):  # noqa: F811
    response = analyst.get("/agents")

    assert response.status_code == 200
    row = r'<tr class="agent-row[^"]*" id="agent([^"]+)" data-path="\1" data-health-key="\1/a2a">'
    rows = re.findall(row, page(response))
    assert rows == ["/currency-agent", "/poet"]  # the private agent is not the analyst's
    assert "<li>summarize</li>" in page(response)
    assert 'aria-label="Disable Poet"' in page(response)
    assert 'aria-label="Disable Currency Agent"' not in page(response)  # no toggle_agent there


def test_each_row_shows_the_agents_health_and_whether_its_card_is_signed(analyst, registry):  # noqa: F811
    Agent.objects.filter(path="/poet").update(health_status="unhealthy", health_detail="connection refused")
    Agent.objects.filter(path="/currency-agent").update(signed_card={"name": "Currency Agent"})

    html = page(analyst.get("/agents"))
    poet = html[html.index('id="agent/poet"') :]
    currency = html[html.index('id="agent/currency-agent"') : html.index('id="agent/poet"')]

    assert '<span class="badge status-unhealthy" data-health-status="unhealthy">Unhealthy</span>' in poet
    assert '<div class="health-detail small" data-health-detail>connection refused</div>' in poet
    assert "data-signed-card" in currency and "data-signed-card" not in poet
    assert 'data-health-socket="/api/health/ws/health_status" data-health-kind="agent"' in html


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
    response = client.get("/agents")

    assert (response.status_code, response["Location"]) == (302, "/login?next=%2Fagents")


def test_the_old_search_address_leads_to_the_search_page(analyst):  # noqa: F811
    response = analyst.get("/agents", {"q": "convert currency"})

    assert (response.status_code, response["Location"]) == (302, "/search?q=convert+currency")


def test_each_agent_shows_its_calls_of_the_last_day_by_a2a_method(client, admin_user, settings):
    from tests.factories import AgentFactory, ToolCallFactory

    settings.METRICS_API_KEY = "reported"
    AgentFactory(path="/echo", name="Echo", is_enabled=True, visibility="public")
    for method, ms, ok in (("message/send", 100, True), ("message/send", 300, False), ("tasks/get", 5, True)):
        ToolCallFactory(duration_ms=ms, success=ok, method=method, dimensions={"server": "/echo"})
    client.force_login(admin_user)

    usage = re.findall(r"<li><code>([^<]+)</code>: ([^<]+)</li>", page(client.get("/agents")))

    assert usage == [
        ("message/send", "2 calls in 24 h, 1 failed; p50 200.0 ms, p95 290.0 ms"),
        ("tasks/get", "1 calls in 24 h, 0 failed; p50 5.0 ms, p95 5.0 ms"),
    ]
