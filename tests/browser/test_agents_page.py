"""The agents page in Chromium: its title is its name alone; an agent's health follows real checks of a
real a2a-sdk agent live, through the health websocket, and the servers' status page does not take agents'
entries for servers."""

import pytest

from agents.models import Agent
from agents.tasks import check_agent_task
from tests.a2a_agents import echo_agent
from tests.browser.conftest import log_in
from tests.browser.test_dashboard import elsewhere
from tests.factories import AgentFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_agents_health_follows_its_checks_live(page, site, operator_user, screenshot):
    running = echo_agent()
    try:
        agent = AgentFactory(
            path="/echo",
            name="Echo",
            url=running.url("/"),
            is_enabled=True,
            visibility="public",
            health_status="unknown",
        )
        log_in(page, "olga", "/login?next=/agents")
        page.goto(site.url("/agents"))
        page.wait_for_selector("[data-live-indicator][data-state=on]")
        assert page.title() == "Agents · MCP Gateway Registry"
        assert page.locator("title script").count() == 0
        echo = page.locator('tr[data-path="/echo"]')

        elsewhere(check_agent_task, agent.pk)
        echo.locator("[data-health-status=healthy]").wait_for()
        assert echo.locator("[data-last-checked]").inner_text().startswith("checked")
        running.stop()
        elsewhere(check_agent_task, agent.pk)
        echo.locator("[data-health-status=unhealthy]").wait_for()
        assert echo.locator("[data-health-detail]").inner_text() == "connection refused"
        screenshot(page, "agents-unhealthy-live")
    finally:
        running.stop()

    # The status page adds a row for every server it hears of: an agent's entry is not one.
    page.goto(site.url("/status"))
    page.wait_for_function("document.querySelector('[data-health-socket]') !== null")
    page.wait_for_timeout(500)  # the socket is open
    Agent.objects.filter(pk=agent.pk).update(health_status="unknown")
    elsewhere(check_agent_task, agent.pk)
    page.wait_for_timeout(1500)
    assert page.locator('[data-health-socket] tr[data-path="/echo/a2a"]').count() == 0
