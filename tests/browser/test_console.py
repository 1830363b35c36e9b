"""The operator's main journeys in Chromium, against real processes: register a loopback MCP server,
enable it and see its tools; watch it turn unhealthy and recover without a reload (a Celery worker and
beat with a 1-second re-check, as `make run` starts them); a token generated and copied; agents found
by meaning; a scoped user's view; the admin's scope form refusing a malformed rule."""

import socket

import pytest
from mcp.server import MCPServer

from core.embeddings import get_provider
from search.services import agents_embed
from tests.browser.conftest import PASSWORD, log_in
from tests.factories import AgentFactory, ServerFactory
from tests.mcp_servers import LOOPBACK, UvicornThread, time_tools
from tests.processes import ProcessGroup, wait_worker_ready

pytestmark = pytest.mark.django_db(transaction=True)


def clock_server(port: int = 0) -> UvicornThread:
    """A real MCP server (current_time, add, echo) on a loopback port; the same port again when given."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((LOOPBACK, port))
    app = time_tools(MCPServer("Clock", log_level="WARNING")).streamable_http_app()
    return UvicornThread(app, sock).start()


@pytest.fixture
def worker_and_beat(tmp_path):
    """A Celery worker and beat on the test database, re-checking unhealthy servers after 1 second."""
    group = ProcessGroup(tmp_path)
    env = {"HEALTH_RECHECK_MIN_SECONDS": "1", "HEALTH_CHECK_TIMEOUT_SECONDS": "5"}
    try:
        worker = group.start(
            "worker",
            "celery",
            "-A",
            "registry_site",
            "worker",
            "--pool",
            "threads",
            "-c",
            "4",
            "--loglevel",
            "INFO",
            env=env,
        )
        group.start("beat", "celery", "-A", "registry_site", "beat", "-s", str(tmp_path / "beat"), env=env)
        wait_worker_ready(worker.log_path, worker)
        yield group
    finally:
        group.stop()


def row(page, path):
    return page.locator(f'tr[data-path="{path}"]')


def test_register_enable_see_tools_then_fail_and_recover_live(
    page, operator_user, worker_and_beat, screenshot
):
    clock = clock_server()
    port = clock.port
    log_in(page, "olga")

    page.click("details.register > summary")
    page.fill("#f-name", "Clock")
    page.fill("#f-path", "/clock")
    page.fill("#f-proxy_pass_url", f"http://{LOOPBACK}:{port}/mcp")
    page.fill("#f-description", "What time it is, anywhere")
    screenshot(page, "dashboard-register")
    page.click("form[action='/api/register'] button[type=submit]")
    page.locator(".flash", has_text="Server /clock registered").wait_for()
    assert row(page, "/clock").locator("[data-state]").inner_text() == "Disabled"

    page.click('button[aria-label="Enable Clock"]')
    page.wait_for_selector("[data-live-indicator][data-state=on]")
    row(page, "/clock").locator("[data-health-status=healthy]").wait_for(timeout=30_000)
    row(page, "/clock").locator("[data-tools] > summary").click()  # the tools arrived with the check
    tools = row(page, "/clock").locator("[data-tools] .tool-name").all_inner_texts()
    assert tools == ["add", "current_time", "echo"]
    screenshot(page, "dashboard-healthy-tools")

    clock.stop()
    page.click('button[aria-label="Check Clock now"]')
    page.wait_for_selector("[data-live-indicator][data-state=on]")
    row(page, "/clock").locator("[data-health-status=unhealthy]").wait_for(timeout=30_000)
    assert row(page, "/clock").locator("[data-health-detail]").is_visible()
    screenshot(page, "dashboard-down")

    clock = clock_server(port)  # back on its port; nobody touches the page
    try:
        row(page, "/clock").locator("[data-health-status=healthy]").wait_for(timeout=30_000)
        assert row(page, "/clock").locator("[data-health-detail]").is_hidden()
        screenshot(page, "dashboard-recovered")
    finally:
        clock.stop()


def test_a_token_is_generated_copied_and_revoked(page, operator_user, screenshot):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    log_in(page, "olga", "/login?next=/api/tokens")
    page.wait_for_url("**/api/tokens")

    page.select_option("#expires_in_hours", "24")
    page.fill("#description", "laptop")
    page.click("form[action='/api/tokens'] button[type=submit]")
    token = page.locator("#new-token").input_value()
    page.click('button[aria-label="Copy the token"]')
    copied = page.evaluate("navigator.clipboard.readText()")
    screenshot(page, "tokens-new")

    assert copied == token and token.count(".") == 2
    assert page.locator("[data-lifetime]").inner_text() == "1 day"
    assert page.locator("[data-granted] code").all_inner_texts() == ["console-ops"]
    assert page.locator("tr[data-token] td").first.inner_text() == "laptop"
    page.click('button[aria-label^="Revoke the token laptop"]')
    page.locator("h1", has_text="Revoke the token laptop?").wait_for()
    page.click("#confirm-revoke")
    page.locator(".flash", has_text="Token laptop revoked.").wait_for()
    assert page.locator("tr[data-token]").count() == 0


def test_agents_are_found_by_meaning_with_scores(page, operator_user, screenshot):
    assert len(get_provider().embed(["warm up"])[0]) == 384
    AgentFactory(
        path="/time-zones",
        name="World Clock",
        description="Tells the current time in any city or time zone",
        is_enabled=True,
        skills=[{"name": "time_in_city", "description": "Time"}],
    )
    AgentFactory(path="/travel", name="Trip Planner", description="Books flights and hotels", is_enabled=True)
    AgentFactory(
        path="/chef",
        name="Recipe Helper",
        description="Suggests recipes from what is in the fridge",
        is_enabled=True,
    )
    assert agents_embed() == 3
    log_in(page, "olga", "/login?next=/search")
    page.wait_for_url("**/search")

    page.fill("input[name=q]", "what time is it in Tokyo right now")
    page.click("form[role=search] button[type=submit]")
    page.wait_for_selector("[data-search-results]")
    screenshot(page, "search")

    hits = page.locator(".hit").evaluate_all("hits => hits.map(h => [h.dataset.entityType, h.dataset.path])")
    scores = [float(s) for s in page.locator(".hit .score").evaluate_all("s => s.map(e => e.dataset.score)")]
    assert hits[0] == ["a2a_agent", "/time-zones"]
    assert scores == sorted(scores, reverse=True)
    page.click("[data-search-results] .hit-name a >> nth=0")
    page.wait_for_url("**/agents#agent/time-zones")
    screenshot(page, "agents")
    assert page.locator('tr[data-path="/time-zones"] .skills li').all_inner_texts() == ["time_in_city"]


def test_a_scoped_user_sees_only_their_servers(page, operator_user, screenshot):
    ServerFactory(path="/weather", name="Weather")
    ServerFactory(path="/clock", name="Clock")
    ServerFactory(path="/payroll", name="Payroll")
    log_in(page, "olga")
    page.wait_for_selector("tr[data-path]")

    paths = page.locator("tr[data-path]").evaluate_all("rows => rows.map(r => r.dataset.path)")
    assert paths == ["/clock", "/weather"]
    assert page.locator("[data-state-filter=all] .count").inner_text() == "2"
    response = page.goto("/edit/payroll")
    assert response.status == 404  # another team's server does not exist for her
    screenshot(page, "scoped-user-404")


def test_the_admin_scope_form_refuses_a_malformed_rule(page, django_user_model, screenshot):
    django_user_model.objects.create_superuser("root", "root@example.test", PASSWORD)
    ServerFactory(path="/weather", name="Weather")
    log_in(page, "root", "/login?next=/admin/")
    page.wait_for_url("**/admin/")
    screenshot(page, "admin-index")

    page.goto("/admin/accounts/scope/add/")
    page.fill("#id_name", "weather-callers")
    page.select_option('select[name="server_rules-0-server"]', "/weather")  # a server, but no methods
    page.fill('input[name="server_rules-0-tools"]', "get_forecast")
    page.click("input[name=_save]")

    error = page.locator(".errorlist li").first.inner_text()
    assert error == "Rule 1: methods must name at least one MCP method, or *."
    screenshot(page, "admin-scope-refused")
    page.check('input[name="server_rules-0-methods"][value="tools/call"]')
    page.click("input[name=_save]")
    page.locator(".messagelist .success").wait_for()
    page.goto("/admin/metrics/plots/")
    screenshot(page, "admin-metrics-plots")
