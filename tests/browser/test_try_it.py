""" "Try it" on a server's page, in Chromium at 1440 and 390 px: a long answer wraps inside its box (nothing
wider than the screen), a refusal shows the gateway's message and when to try again (never a status and a
JSON body), and a link to connect a credential is a link."""

import pytest

from limits.services import limit_set
from tests.browser.conftest import PASSWORD, log_in, overflow
from tests.factories import ServerFactory
from tests.mcp_servers import time_server_fixture  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

ECHO = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


@pytest.fixture
def cleo(member, scope_factory):
    rules = [{"server": "*", "methods": ["initialize", "tools/list", "tools/call"], "tools": ["*"]}]
    scope_factory("callers", group="callers", server_rules=rules)
    user = member("cleo", "callers")
    user.set_password(PASSWORD)
    user.save()
    return user


def try_tool(page, tool_name: str, arguments: str):
    tool = page.locator(f"[data-tool='{tool_name}']")
    if tool.locator("details.try").get_attribute("open") is None:
        tool.locator("details.try summary").click()
    tool.locator("textarea").fill(arguments)
    tool.locator("button[type=submit]").click()
    result = tool.locator("[data-try-result]")
    page.wait_for_function("(out) => Boolean(out.dataset.outcome)", arg=result.element_handle())
    outcome = result.get_attribute("data-outcome")
    page.evaluate("(out) => { delete out.dataset.outcome; }", result.element_handle())
    return result, outcome


def test_a_long_answer_wraps_inside_its_box(sized, cleo, time_server, screenshot):
    page, width = sized
    clock = ServerFactory(path="/clock", name="Clock", proxy_pass_url=time_server, health_status="healthy")
    clock.tools.create(name="echo", input_schema=ECHO)
    log_in(page, "cleo", "/login?next=/servers/clock")

    result, outcome = try_tool(page, "echo", '{"text": "%s"}' % ("x" * 3000))
    fits = result.evaluate("(out) => out.scrollWidth <= out.clientWidth")
    screenshot(page, f"try-it-long-{width}")

    assert outcome == "result"
    assert fits and overflow(page) == 0


def test_a_refusal_shows_its_message_and_when_to_try_again(sized, cleo, time_server):
    page, _ = sized
    clock = ServerFactory(path="/clock", name="Clock", proxy_pass_url=time_server, health_status="healthy")
    clock.tools.create(name="echo", input_schema=ECHO)
    limit_set(
        actor=None,
        caller_kind="user",
        caller="cleo",
        target_kind="server",
        target="/clock",
        windows=[{"per": "hour", "limit": 1}],  # an hour: two calls never fall in two windows
    )
    log_in(page, "cleo", "/login?next=/servers/clock")

    try_tool(page, "echo", '{"text": "one"}')
    result, outcome = try_tool(page, "echo", '{"text": "two"}')
    text = result.inner_text()

    assert outcome == "refused"
    assert "HTTP" not in text and "{" not in text
    assert "Try again in" in text
    assert text.startswith("Rate limit")


def test_a_link_to_connect_a_credential_is_a_link(sized, cleo, time_server, site):
    page, _ = sized
    keyed = ServerFactory(
        path="/keyed",
        name="Keyed",
        proxy_pass_url=time_server,
        health_status="healthy",
        upstream_auth="user_secret",
        user_secret_header="X-Api-Key: {secret}",
    )
    keyed.tools.create(name="echo", input_schema=ECHO)
    log_in(page, "cleo", "/login?next=/servers/keyed")

    result, outcome = try_tool(page, "echo", '{"text": "hi"}')
    link = result.locator("a")

    assert outcome == "error"
    assert link.get_attribute("href") == site.url("/connections/keyed")


def test_the_servers_page_says_what_limits_it_and_that_usage_is_not_reported(sized, cleo, time_server):
    from limits.services import quarantine_set

    page, width = sized
    clock = ServerFactory(path="/clock", name="Clock", proxy_pass_url=time_server, health_status="healthy")
    clock.tools.create(name="echo", input_schema=ECHO)
    quarantine_set(actor=None, kind="server", name="/clock", reason="moving to a new host tonight")
    log_in(page, "cleo", "/login?next=/servers/clock")

    said = page.locator("[data-restriction]").all_inner_texts()
    usage = page.locator("[data-usage]").inner_text()

    assert said == ["Quarantined by an operator: moving to a new host tonight"]
    assert usage.startswith("Usage is not reported")
    assert overflow(page) == 0
