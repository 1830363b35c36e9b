"""Health checks and tool discovery against real MCP servers on loopback (tests/mcp_servers.py).

Nothing is mocked: each check opens a real MCP session with the official SDK over real HTTP."""

import time

import pytest
from django.forms.models import model_to_dict

from accounts.models import AuditEvent
from servers.choices import HealthStatus
from servers.health import CheckResult, check_and_record, check_server, probe
from servers.models import Server, Tool
from servers.services import server_health_record
from servers.tasks import check_server_task
from tests.factories import ServerFactory, ToolFactory

# The `*_fixture` imports register time_server, sse_server, auth_server, ... for this module.
from tests.mcp_servers import (  # noqa: F401
    AUTH_TOKEN,
    PAGED_TOOL_COUNT,
    RPC_ERROR_MESSAGE,
    UNSCOPED_TOKEN,
    auth_server_fixture,
    era_servers_fixture,
    fault_servers_fixture,
    paged_server_fixture,
    sse_server_fixture,
    time_server_fixture,
)

pytestmark = pytest.mark.django_db

# What MCPServer derives from `current_time(timezone: str)` and `add(a: int, b: int)`.
TIME_TOOLS = [
    (
        "add",
        "Add two integers.",
        {
            "type": "object",
            "properties": {"a": {"title": "A", "type": "integer"}, "b": {"title": "B", "type": "integer"}},
            "required": ["a", "b"],
            "title": "addArguments",
        },
    ),
    (
        "current_time",
        "Return the current time in an IANA timezone.",
        {
            "type": "object",
            "properties": {"timezone": {"title": "Timezone", "type": "string"}},
            "required": ["timezone"],
            "title": "current_timeArguments",
        },
    ),
    (
        "echo",
        "Return the text unchanged.",
        {
            "type": "object",
            "properties": {"text": {"title": "Text", "type": "string"}},
            "required": ["text"],
            "title": "echoArguments",
        },
    ),
]
FAULT_TIMEOUT = 2


def stored_tools(server: Server) -> list[tuple]:
    return list(server.tools.order_by("name").values_list("name", "description", "input_schema"))


def timed_check(server: Server) -> tuple[CheckResult, float]:
    started = time.monotonic()
    result = check_and_record(server.pk)
    return result, time.monotonic() - started


@pytest.mark.parametrize("transports", [[], ["streamable-http"], ["streamable-http", "sse"]])
def test_a_streamable_http_server_is_healthy_and_its_tools_are_stored(time_server, transports):
    server = ServerFactory(proxy_pass_url=time_server, supported_transports=transports)

    result = check_and_record(server.pk)

    assert (result.status, result.detail) == ("healthy", "3 tools listed")
    assert [tool["name"] for tool in result.tools] == ["current_time", "add", "echo"]
    server.refresh_from_db()
    assert (server.health_status, server.health_detail) == ("healthy", "3 tools listed")
    assert server.last_checked_at == result.checked_at
    assert server.num_tools == 3
    assert stored_tools(server) == TIME_TOOLS
    assert AuditEvent.objects.count() == 0  # a health result is not an operator mutation


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"])
def test_a_server_of_any_protocol_era_is_healthy_and_its_tools_are_stored(era_servers, version):
    server = ServerFactory(proxy_pass_url=era_servers[version])

    result = check_and_record(server.pk)

    assert (result.status, result.detail) == ("healthy", "3 tools listed")
    server.refresh_from_db()
    assert (server.health_status, server.num_tools) == ("healthy", 3)
    assert stored_tools(server) == TIME_TOOLS


def test_an_sse_server_is_healthy_and_its_tools_are_stored(sse_server):
    server = ServerFactory(proxy_pass_url=sse_server, supported_transports=["sse"])

    result = check_and_record(server.pk)

    assert (result.status, result.detail) == ("healthy", "3 tools listed")
    server.refresh_from_db()
    assert (server.health_status, server.num_tools) == ("healthy", 3)
    assert stored_tools(server) == TIME_TOOLS


def test_a_paginated_tool_listing_is_followed_to_its_last_page(paged_server):
    # The server pages 50 tools at a time, so every tool past the 50th arrived by following a cursor.
    server = ServerFactory(proxy_pass_url=paged_server)

    result = check_and_record(server.pk)

    assert (result.status, result.detail) == ("healthy", f"{PAGED_TOOL_COUNT} tools listed")
    server.refresh_from_db()
    assert server.num_tools == PAGED_TOOL_COUNT
    assert list(server.tools.values_list("name", flat=True)) == [
        f"tool_{i:03d}" for i in range(PAGED_TOOL_COUNT)
    ]
    assert server.tools.get(name="tool_119").input_schema == {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
    }


@pytest.mark.parametrize(
    "headers, detail",
    [
        ({}, "401 Unauthorized: credentials required and none are configured"),
        ({"Authorization": "Bearer revoked-token"}, "401 Unauthorized: credentials refused"),
        ({"Authorization": f"Bearer {UNSCOPED_TOKEN}"}, "403 Forbidden: credentials refused"),
    ],
)
def test_a_server_refusing_our_credentials_is_not_healthy_but_auth_refused(auth_server, headers, detail):
    server = ServerFactory(proxy_pass_url=auth_server, headers=headers)
    ToolFactory(server=server, name="add", description="kept", input_schema={"type": "object"})

    result = check_and_record(server.pk)

    assert (result.status, result.detail, result.tools) == ("auth-refused", detail, None)
    server.refresh_from_db()
    assert (server.health_status, server.health_detail) == ("auth-refused", detail)
    assert stored_tools(server) == [("add", "kept", {"type": "object"})]


def test_the_configured_authorization_header_is_sent(auth_server):
    server = ServerFactory(proxy_pass_url=auth_server, headers={"Authorization": f"Bearer {AUTH_TOKEN}"})

    result = check_and_record(server.pk)

    assert (result.status, result.detail) == ("healthy", "3 tools listed")
    server.refresh_from_db()
    assert (server.health_status, server.num_tools) == ("healthy", 3)
    assert stored_tools(server) == TIME_TOOLS


@pytest.mark.parametrize(
    "transport, fault, detail",
    [
        ("streamable-http", "refused", "connection refused"),
        ("streamable-http", "silent", f"timed out after {FAULT_TIMEOUT} s"),
        ("streamable-http", "html", "not an MCP server: response is HTML"),
        ("streamable-http", "invalid_jsonrpc", "invalid JSON-RPC response"),
        ("streamable-http", "error_500", "HTTP 500 from server"),
        ("sse", "refused", "connection refused"),
        ("sse", "silent", f"timed out after {FAULT_TIMEOUT} s"),
        ("sse", "html", "not an MCP server: response is HTML"),
        ("sse", "invalid_jsonrpc", "not an MCP server: response is application/json"),
        ("sse", "error_500", "HTTP 500 from server"),
    ],
)
def test_a_faulty_server_is_unhealthy_with_a_readable_detail(
    settings, fault_servers, transport, fault, detail
):
    settings.HEALTH_CHECK_TIMEOUT_SECONDS = FAULT_TIMEOUT
    server = ServerFactory(proxy_pass_url=getattr(fault_servers, fault), supported_transports=[transport])

    result, elapsed = timed_check(server)

    assert (result.status, result.detail, result.tools) == ("unhealthy", detail, None)
    assert elapsed < FAULT_TIMEOUT + 2
    assert 0 <= result.elapsed_ms <= elapsed * 1000
    server.refresh_from_db()
    assert (server.health_status, server.health_detail) == ("unhealthy", detail)
    assert server.last_checked_at == result.checked_at
    assert (server.num_tools, server.tools.count()) == (0, 0)


def test_a_json_rpc_error_is_reported_on_one_clipped_line(fault_servers):
    server = ServerFactory(proxy_pass_url=fault_servers.rpc_error)

    result = check_and_record(server.pk)

    assert result.status == "unhealthy"
    assert len(result.detail) == 300
    assert result.detail == f"MCP error -32603: {RPC_ERROR_MESSAGE}"[:299] + "…"


def test_an_unsendable_header_is_reported_without_its_value(time_server):
    server = ServerFactory(proxy_pass_url=time_server, headers={"Authorization": "Bearer top\nsecret"})

    result, elapsed = timed_check(server)

    assert (result.status, result.tools) == ("unhealthy", None)
    assert result.detail == "outbound header 'Authorization' cannot be sent: not one line of ASCII"
    assert elapsed < 1


def test_a_failing_check_keeps_the_last_known_tools(settings, fault_servers):
    settings.HEALTH_CHECK_TIMEOUT_SECONDS = FAULT_TIMEOUT
    server = ServerFactory(proxy_pass_url=fault_servers.refused, health_status="healthy", num_tools=2)
    kept = {ToolFactory(server=server, name="add").pk, ToolFactory(server=server, name="current_time").pk}

    result = check_and_record(server.pk)

    assert (result.status, result.detail) == ("unhealthy", "connection refused")
    server.refresh_from_db()
    assert (server.health_status, server.health_detail) == ("unhealthy", "connection refused")
    assert server.num_tools == 2
    assert set(server.tools.values_list("pk", flat=True)) == kept


def test_a_changed_listing_replaces_the_stored_tools(time_server):
    server = ServerFactory(proxy_pass_url=time_server, num_tools=1)
    ToolFactory(server=server, name="retired_tool")
    updated_before = server.updated_at

    check_and_record(server.pk)

    server.refresh_from_db()
    assert stored_tools(server) == TIME_TOOLS
    assert server.num_tools == 3
    assert server.updated_at > updated_before


def test_an_unchanged_listing_rewrites_nothing_but_the_check(time_server):
    server = ServerFactory(proxy_pass_url=time_server)
    first = check_and_record(server.pk)
    server.refresh_from_db()
    tool_ids = list(server.tools.values_list("pk", flat=True))
    updated_at = server.updated_at

    second = check_and_record(server.pk)

    server.refresh_from_db()
    assert second.checked_at > first.checked_at
    assert server.last_checked_at == second.checked_at
    assert list(server.tools.values_list("pk", flat=True)) == tool_ids
    assert server.updated_at == updated_at  # `updated_since` listings are not flooded by sweeps


def test_a_disabled_server_is_not_checked_and_nothing_changes(time_server):
    server = ServerFactory(proxy_pass_url=time_server, is_enabled=False)
    before = model_to_dict(server)

    assert check_and_record(server.pk) is None

    server.refresh_from_db()
    assert model_to_dict(server) == before
    assert (server.health_status, server.last_checked_at) == ("disabled", None)
    assert Tool.objects.count() == 0


def test_an_unknown_server_id_is_not_checked():
    assert check_and_record(987654321) is None


def test_a_server_disabled_while_its_check_ran_is_not_written(time_server):
    server = ServerFactory(proxy_pass_url=time_server)
    result = check_server(server)
    Server.objects.filter(pk=server.pk).update(is_enabled=False, health_status=HealthStatus.DISABLED)

    assert server_health_record(server=server, result=result) is False

    server.refresh_from_db()
    assert (server.health_status, server.health_detail, server.last_checked_at) == ("disabled", "", None)
    assert (server.num_tools, server.tools.count()) == (0, 0)


def test_the_check_task_records_the_result(time_server):
    server = ServerFactory(proxy_pass_url=time_server)

    check_server_task.apply(args=[server.pk]).get()

    server.refresh_from_db()
    assert (server.health_status, server.num_tools) == ("healthy", 3)


@pytest.mark.anyio
async def test_probe_reports_a_url_it_cannot_use_instead_of_raising():
    result = await probe("ftp://127.0.0.1/mcp", transport="streamable-http", headers={}, timeout=2)

    assert (result.status, result.tools) == ("unhealthy", None)
    assert result.detail == "invalid URL: Request URL has an unsupported protocol 'ftp://'."
