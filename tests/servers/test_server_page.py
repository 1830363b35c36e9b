"""The page of one server (/servers/<path>): health now and over time with the reasons, tools as
parameter tables with their calls through the gateway, and configurations for the usual hosts."""

import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from servers.models import HealthTransition
from tests.factories import ServerFactory, ToolCallFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def clock(db):
    server = ServerFactory(path="/clock", name="Clock", health_status="healthy")
    server.tools.create(
        name="add",
        description="Adds two numbers",
        input_schema={
            "type": "object",
            "properties": {
                "a": {"type": "integer", "description": "first"},
                "b": {"type": ["integer", "null"]},
            },
            "required": ["a"],
        },
    )
    server.tools.create(name="echo", input_schema={"type": "object", "properties": {}})
    return server


def html(response) -> str:
    return response.content.decode()


def test_the_page_shows_health_over_time_with_the_reasons(client, clock, member, scope_factory):
    now = timezone.now()
    HealthTransition.objects.create(
        server=clock, from_status="unknown", to_status="healthy", at=now - timedelta(hours=30)
    )
    HealthTransition.objects.create(
        server=clock,
        from_status="healthy",
        to_status="unhealthy",
        detail="timed out after 10 s",
        at=now - timedelta(hours=6),
    )
    HealthTransition.objects.create(
        server=clock, from_status="unhealthy", to_status="healthy", at=now - timedelta(hours=3)
    )
    scope_factory("clock-list", group="clockers", ui={"list_service": ["/clock"]})
    client.force_login(member("cleo", "clockers"))

    page = html(client.get("/servers/clock"))

    assert re.search(r'<dd data-uptime="day">(\d+) % healthy</dd>', page).group(1) == "88"  # 21 of 24 hours
    assert re.search(r'<dd data-uptime="week">(\d+) % healthy</dd>', page).group(1) == "90"  # 27 of 30 hours
    changes = re.findall(r"</time> (\w+(?: \([^)]*\))?) → <strong>([^<]+)</strong>", page)
    assert changes == [
        ("Unhealthy", "Healthy"),
        ("Healthy", "Unhealthy"),
        ("Unknown (never checked)", "Healthy"),
    ]
    assert "timed out after 10 s" in page
    assert page.count('<rect class="status-') == 3


def test_tools_are_parameter_tables_with_their_calls_through_the_gateway(client, clock, admin_user, settings):
    settings.METRICS_API_KEY = "reported"
    for ms, ok in ((10, True), (20, True), (30, False)):
        ToolCallFactory(duration_ms=ms, success=ok, tool_name="add")
    client.force_login(admin_user)

    page = html(client.get("/servers/clock"))

    add = page.split('data-tool="add"')[1].split("</article>")[0]
    rows = re.findall(
        r'<td data-label="Parameter"><code>(\w+)</code></td><td data-label="Type">([^<]+)</td>'
        r'<td data-label="Required">(\w+)</td>',
        add,
    )
    assert rows == [("a", "integer", "yes"), ("b", "integer or null", "no")]
    assert "3 calls in the last 24 hours, 1 failed; p50 20.0 ms" in add
    assert "No calls through the gateway in the last 24 hours." in page.split('data-tool="echo"')[1]


def test_where_usage_is_not_reported_the_page_says_so_not_that_nothing_was_called(client, clock, admin_user):
    client.force_login(admin_user)  # the test settings report no metrics (METRICS_API_KEY is empty)

    page = html(client.get("/servers/clock"))

    usage = re.findall(r"<p class=\"muted small\" data-usage>(.*?)</p>", page)
    assert len(usage) == 2
    assert all(
        text.startswith("Usage is not reported: this registry does not send its metrics") for text in usage
    )
    assert "No calls through the gateway" not in page


def test_the_usual_hosts_get_their_configuration_for_the_gateway_url(client, clock, admin_user):
    client.force_login(admin_user)

    page = html(client.get("/servers/clock"))

    assert "<code data-gateway-url>http://testserver/clock/mcp</code>" in page
    claude = re.search(r'data-host="Claude Code">.*?<code>([^<]+)</code>', page, re.S).group(1)
    vscode = re.search(r'data-host="VS Code">.*?<code>([^<]+)</code>', page, re.S).group(1)
    assert claude == "claude mcp add --transport http clock http://testserver/clock/mcp"
    assert json.loads(vscode.replace("&quot;", '"')) == {
        "servers": {"clock": {"type": "http", "url": "http://testserver/clock/mcp"}}
    }


def test_an_unseen_server_is_not_found_and_tools_follow_the_tool_rule(client, clock, member, scope_factory):
    ServerFactory(path="/secret")
    rules = [{"server": "/clock", "methods": ["tools/call"], "tools": ["echo"]}]
    scope_factory("clock-echo", group="echoers", server_rules=rules)
    client.force_login(member("eve", "echoers"))

    secret = client.get("/servers/secret")
    page = html(client.get("/servers/clock"))

    assert secret.status_code == 404
    assert re.findall(r'data-tool="(\w+)"', page) == ["echo"]


def test_try_it_is_offered_for_the_tools_the_viewer_may_call_only(client, clock, member, scope_factory):
    scope_factory("clock-list", group="listers", ui={"list_service": ["/clock"]})
    scope_factory(
        "clock-add",
        group="adders",
        server_rules=[{"server": "/clock", "methods": ["tools/call"], "tools": ["add"]}],
    )
    client.force_login(member("lou", "listers"))
    listing = html(client.get("/servers/clock"))
    client.force_login(member("ada", "adders"))
    calling = html(client.get("/servers/clock"))

    assert re.findall(r'data-tool="(\w+)"', listing) == ["add", "echo"]
    assert "data-try-tool" not in listing
    assert re.findall(r'data-try-tool="(\w+)"', calling) == ["add"]
    assert "{\n  &quot;a&quot;: 0,\n  &quot;b&quot;: 0\n}" in calling  # the starting arguments, by type


def test_a_tool_that_answered_with_its_own_error_counts_as_failed(client, clock, admin_user, settings):
    settings.METRICS_API_KEY = "reported"
    for ms, error_type in ((10, None), (20, "tool_error"), (30, None)):
        # a result with isError is a JSON-RPC success
        ToolCallFactory(
            duration_ms=ms, tool_name="add", dimensions={"server": "/clock", "error_type": error_type}
        )
    client.force_login(admin_user)

    add = html(client.get("/servers/clock")).split('data-tool="add"')[1].split("</article>")[0]

    assert "3 calls in the last 24 hours, 1 failed; p50 20.0 ms" in add
