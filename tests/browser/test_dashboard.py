"""The dashboard in Chromium: live health (status, reason, check time, state and buttons) without a
reload, a second session's toggle seen by the first, the tools of a server without leaving the page, the
MCP URL copied, and the counts and filters by state. The health checks are real, against loopback MCP
servers (the official SDK), run in the test; the page learns of them through the websocket."""

import threading

import pytest
from django.contrib.auth.models import Group
from django.db import connection

from servers.health import check_and_record
from servers.models import Server
from servers.services.registry import server_create, server_delete, server_toggle, server_update
from tests.browser.conftest import log_in
from tests.factories import ServerFactory
from tests.mcp_servers import fault_servers_fixture, time_server_fixture  # noqa: F401
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def elsewhere(function, *args, **kwargs):
    """Run `function` in a thread of its own, as another process would (Playwright holds this thread's
    event loop, and publishing a change needs one of its own); returns its result."""
    results = []

    def run():
        try:
            results.append(function(*args, **kwargs))
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(60)
    return results[0]


def check(server_pk: int) -> None:
    """A real health check, as a worker would run it."""
    elsewhere(check_and_record, server_pk)


def row(page, path):
    return page.locator(f'tr[data-path="{path}"]')


def test_health_state_and_buttons_follow_checks_and_other_sessions_live(
    browser, page, site, operator_user, time_server, fault_servers, screenshot
):
    server = ServerFactory(path="/clock", name="Clock", proxy_pass_url=time_server, health_status="unknown")
    log_in(page, "olga")
    page.wait_for_selector("[data-live-indicator][data-state=on]")
    clock = row(page, "/clock")

    check(server.pk)
    clock.locator("[data-health-status=healthy]").wait_for()
    first_checked = clock.locator("[data-last-checked]").get_attribute("data-checked-iso")
    assert clock.locator("[data-num-tools]").inner_text() == "3"
    check(server.pk)  # nothing changes but the time of the check
    page.wait_for_function(
        "([path, first]) => document.querySelector(`tr[data-path='${path}'] [data-last-checked]`)"
        ".dataset.checkedIso !== first",
        arg=["/clock", first_checked],
    )

    server_update(actor=None, server=Server.objects.get(pk=server.pk), proxy_pass_url=fault_servers.refused)
    check(server.pk)
    clock.locator("[data-health-status=unhealthy]").wait_for()
    detail = clock.locator("[data-health-detail]")
    assert detail.is_visible()
    assert "refused" in detail.inner_text().lower() or "connect" in detail.inner_text().lower()
    screenshot(page, "dashboard-unhealthy")

    other = browser.new_context(base_url=site.url(""))
    second = other.new_page()
    log_in(second, "olga")
    second.click('button[aria-label="Disable Clock"]')
    second.wait_for_selector(".flash")
    other.close()

    clock.locator("[data-state]", has_text="Disabled").wait_for()
    assert clock.locator("[data-health-status]").is_hidden()  # "Disabled" is said once, by the state
    assert clock.inner_text().split().count("Disabled") == 1
    assert clock.locator("[data-health-detail]").is_hidden()
    assert clock.locator("[data-toggle] button").inner_text() == "Enable"
    assert clock.locator("[data-refresh]").is_hidden()
    screenshot(page, "dashboard-disabled-live")


def test_tools_copy_and_state_filters(page, site, operator_user, time_server, fault_servers, screenshot):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    clock = ServerFactory(path="/clock", name="Clock", proxy_pass_url=time_server)
    weather = ServerFactory(path="/weather", name="Weather", proxy_pass_url=fault_servers.refused)
    check(clock.pk)
    check(weather.pk)
    Group.objects.get(name="console-ops")  # the operator sees both
    log_in(page, "olga")

    row(page, "/clock").locator("[data-tools] > summary").click()
    tools = row(page, "/clock").locator("[data-tools] .tool-name").all_inner_texts()
    row(page, "/clock").locator("[data-tools] .schema summary").first.click()
    schema = row(page, "/clock").locator("[data-tools] .schema pre").first.inner_text()
    screenshot(page, "dashboard-tools")
    row(page, "/clock").locator(".gateway-url [data-copy]").click()
    copied = page.evaluate("navigator.clipboard.readText()")

    assert tools == ["add", "current_time", "echo"]
    assert '"properties"' in schema
    assert copied == site.url("/clock/mcp")
    counts = {
        name: page.locator(f"[data-state-filter={name}] .count").inner_text()
        for name in ("all", "enabled", "disabled", "unhealthy")
    }
    assert counts == {"all": "2", "enabled": "2", "disabled": "0", "unhealthy": "1"}

    page.click("[data-state-filter=unhealthy]")
    page.wait_for_url("**state=unhealthy")
    assert page.locator("tr[data-path]").evaluate_all("rows => rows.map(r => r.dataset.path)") == ["/weather"]


def test_servers_registered_or_removed_elsewhere_appear_and_disappear_live(
    browser, page, site, operator_user, screenshot
):
    log_in(page, "olga")
    page.wait_for_selector("[data-live-indicator][data-state=on]")
    status = browser.new_context(base_url=site.url("")).new_page()
    status.goto("/status")
    status.wait_for_selector("[data-live-indicator][data-state=on]")
    assert page.locator("tr[data-path]").count() == 0

    weather = elsewhere(
        server_create,
        actor=None,
        path="/weather",
        name="Weather",
        description="Forecasts",
        proxy_pass_url="http://127.0.0.1:9/mcp",
        is_enabled=True,
    )
    row(page, "/weather").locator('a[aria-label="Edit Weather"]').wait_for()  # a whole row, with buttons
    row(status, "/weather").wait_for()
    page.locator("[data-state-filter=all] .count", has_text="1").wait_for()
    elsewhere(server_create, actor=None, path="/secret", name="Secret", proxy_pass_url="http://127.0.0.1:9/x")
    screenshot(page, "dashboard-added-live")

    elsewhere(server_toggle, actor=None, server=weather, enabled=False)
    row(status, "/weather").wait_for(state="detached")  # /status lists enabled servers only
    row(page, "/weather").locator("[data-state]", has_text="Disabled").wait_for()
    elsewhere(server_delete, actor=None, server=Server.objects.get(path="/weather"))
    row(page, "/weather").wait_for(state="detached")

    assert page.locator("tr[data-path]").count() == 0  # /secret is not the operator's to see
    assert page.locator("td.empty").inner_text() == "There are no servers you can see yet."
    status.context.close()


def test_a_server_removed_while_the_page_is_fetched_again_does_not_come_back(page, site, operator_user):
    """Disabling a server makes the page fetch itself again (for the counts by state); that copy, taken
    before the server was deleted, answers after the deletion has removed its row."""
    weather = ServerFactory(path="/weather", name="Weather", proxy_pass_url="http://127.0.0.1:9/mcp")
    log_in(page, "olga")
    page.wait_for_selector("[data-live-indicator][data-state=on]")
    held = []

    def hold(route):  # the first fetch: the page as it is now, answered only when the test says so
        if route.request.resource_type == "fetch" and not held:
            held.append((route, route.fetch()))
        else:
            route.fallback()

    page.route("**/*", hold)
    elsewhere(server_toggle, actor=None, server=weather, enabled=False)
    row(page, "/weather").locator("[data-state]", has_text="Disabled").wait_for()
    wait_for(lambda: held or page.wait_for_timeout(50), timeout=10, what="the page fetched again")
    elsewhere(server_delete, actor=None, server=Server.objects.get(path="/weather"))
    row(page, "/weather").wait_for(state="detached")

    route, answer = held[0]
    route.fulfill(response=answer)  # still lists /weather
    page.locator("[data-state-filter=all] .count", has_text="0").wait_for()  # fetched after the deletion

    assert page.locator("tr[data-path]").count() == 0
    assert page.locator("td.empty").inner_text() == "There are no servers you can see yet."
