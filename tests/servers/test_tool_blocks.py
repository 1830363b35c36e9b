"""Blocking one tool of a server: hidden from every list and refused on every call, to every caller,
administrators included, whatever the scope rules say, at once on every gateway instance (their caches
follow the block's epoch), and back when unblocked; audited; the console's rule is the server's."""

import json

import pytest
from django.core.exceptions import ValidationError
from mcp.shared.exceptions import MCPError

from accounts.models import AuditEvent
from servers import services
from servers.models import Server, Tool, ToolBlock
from servers.services.tools import tools_store
from tests.factories import ServerFactory
from tests.gateway.gateway_calls import caller_fixture, gateway_fixture, post, run  # noqa: F401
from tests.mcp_servers import UvicornThread, loopback_socket, time_server_fixture  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

EVERYTHING = {"server": "/clock", "methods": ["*"], "tools": ["*"]}
BLOCKED = "Tool 'echo' is blocked by an operator: exfiltrates its input."


async def list_and_call_echo(client):
    tools = sorted(tool.name for tool in (await client.list_tools()).tools)
    try:
        answer = (await client.call_tool("echo", {"text": "hi"})).content[0].text
    except MCPError as refused:
        answer = refused.error.message
    return tools, answer


@pytest.fixture
def clock(time_server):
    server = ServerFactory(path="/clock", proxy_pass_url=time_server, num_tools=3)
    for name in ("add", "current_time", "echo"):
        Tool.objects.create(server=server, name=name, description=name)
    return server


def test_a_blocked_tool_is_hidden_and_refused_to_everyone_until_unblocked(
    gateway, caller, clock, member, token_for
):
    user, admin = caller(EVERYTHING), token_for(member("ada", "mcp-registry-admin"))
    before = run(gateway.url("/clock/mcp"), user, list_and_call_echo)

    services.tool_block(actor=None, server=clock, name="echo", reason="exfiltrates its input")
    blocked_user = run(gateway.url("/clock/mcp"), user, list_and_call_echo)
    blocked_admin = run(gateway.url("/clock/mcp"), admin, list_and_call_echo)
    services.tool_unblock(actor=None, block=ToolBlock.objects.get())
    after = run(gateway.url("/clock/mcp"), user, list_and_call_echo)

    assert before == (["add", "current_time", "echo"], "hi")
    assert blocked_user == blocked_admin == (["add", "current_time"], BLOCKED)
    assert after == (["add", "current_time", "echo"], "hi")


def test_another_gateway_instance_refuses_at_once(caller, clock):
    from registry_site.asgi import application

    first = UvicornThread(application, loopback_socket()).start()
    second = UvicornThread(application, loopback_socket()).start()
    token = caller(EVERYTHING)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {}}}
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    try:
        run(second.url("/clock/mcp"), token, list_and_call_echo)  # the second instance has cached the route
        services.tool_block(actor=None, server=clock, name="echo", reason="exfiltrates its input")
        status, _, body = post(second.port, "/clock/mcp", call, headers)
    finally:
        first.stop()
        second.stop()

    answer = (
        json.loads(body.decode().split("data: ", 1)[-1]) if body.startswith(b"event") else json.loads(body)
    )
    assert (status, answer["error"]["message"]) == (200, BLOCKED)


def test_blocking_drops_the_stored_tool_so_every_list_drops_it_and_discovery_keeps_it_out(clock):
    services.tool_block(actor=None, server=clock, name="echo", reason="")
    stored_after_block = sorted(Tool.objects.filter(server=clock).values_list("name", flat=True))
    server = Server.objects.get(pk=clock.pk)

    tools_store(server, [{"name": name} for name in ("add", "current_time", "echo")])  # a later discovery

    assert stored_after_block == ["add", "current_time"]
    assert Server.objects.get(pk=clock.pk).num_tools == 2
    assert sorted(Tool.objects.filter(server=clock).values_list("name", flat=True)) == ["add", "current_time"]
    assert server.num_tools == 2


def test_blocks_and_unblocks_are_audited_and_a_block_is_made_once(clock):
    block = services.tool_block(actor=None, server=clock, name="echo", reason="why")

    with pytest.raises(ValidationError) as twice:
        services.tool_block(actor=None, server=clock, name="echo")
    services.tool_unblock(actor=None, block=block)

    assert twice.value.message_dict == {"name": ["'echo' is blocked on /clock already."]}
    assert list(AuditEvent.objects.order_by("id").values_list("action", "target", "detail")) == [
        ("tool.block", "server:/clock", {"tool": "echo", "reason": "why"}),
        ("tool.unblock", "server:/clock", {"tool": "echo"}),
    ]


def test_the_console_blocks_for_those_who_may_change_the_server_only(client, clock, member, scope_factory):
    scope_factory("ops", group="ops", ui={"list_service": ["clock"], "modify_service": ["clock"]})
    scope_factory("readers", group="readers", ui={"list_service": ["clock"]})
    operator, reader = member("olga", "ops", is_staff=True), member("rita", "readers", is_staff=True)

    client.force_login(reader)
    refused = client.post("/admin/servers/toolblock/add/", {"server": clock.pk, "name": "echo"})
    client.force_login(operator)
    added = client.post("/admin/servers/toolblock/add/", {"server": clock.pk, "name": "echo", "reason": "r"})

    assert refused.status_code == 403
    assert added.status_code == 302
    assert list(ToolBlock.objects.values_list("name", "reason", "blocked_by__username")) == [
        ("echo", "r", "olga")
    ]


def test_blocking_a_name_no_tool_has_is_saved_with_a_warning(admin_client, clock):
    known = admin_client.post("/admin/servers/toolblock/add/", {"server": clock.pk, "name": "echo"})
    typo = admin_client.post("/admin/servers/toolblock/add/", {"server": clock.pk, "name": "ecoh"})

    def said(response):
        return [(message.level_tag, str(message)) for message in response.wsgi_request._messages]

    assert (known.status_code, typo.status_code) == (302, 302)
    assert [level for level, _ in said(known)] == ["success"]
    assert (
        "warning",
        "/clock offers no tool named “ecoh” now: check the name. The block holds whenever a tool of that "
        "name appears.",
    ) in said(typo)
    assert sorted(ToolBlock.objects.values_list("name", flat=True)) == ["echo", "ecoh"]
