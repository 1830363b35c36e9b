"""The console's effective-access view: what a user or group can see and call, who reaches a server, and
a look at a user's access audited."""

import re

import pytest

from accounts.models import AuditEvent
from tests.factories import ServerFactory, ToolFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def registry(member, scope_factory):
    clock = ServerFactory(path="/clock", name="Clock")
    ServerFactory(path="/secret", name="Secret")
    for name in ("add", "echo"):
        ToolFactory(server=clock, name=name)
    rules = [{"server": "/clock", "methods": ["initialize", "tools/list", "tools/call"], "tools": ["add"]}]
    scope_factory("clock-add", group="clockers", server_rules=rules, publish_names=["com.acme/*"])
    member("cleo", "clockers")
    return clock


def page(client, **query) -> str:
    return client.get("/admin/access/", query).content.decode()


def test_a_users_access_is_what_every_surface_lets_them_and_looking_is_audited(admin_client, registry):
    shown = page(admin_client, user="cleo")

    rows = re.findall(
        r'<tr data-server="([^"]+)"><td data-label="Server"><code>[^<]+</code></td>'
        r'<td data-label="May send">([^<]*)</td><td data-label="May call">([^<]*)</td>'
        r'<td data-label="Is shown">([^<]*)</td>',
        shown,
    )
    assert rows == [("/clock", "initialize, tools/list, tools/call", "add", "add")]
    assert "<p data-publish>com.acme/*</p>" in shown
    assert AuditEvent.objects.filter(action="access.view", target="user:cleo").count() == 1


def test_a_servers_reach_names_the_groups_and_their_rules(admin_client, registry):
    shown = page(admin_client, server="/clock")

    assert re.findall(
        r'<tr data-group="([^"]+)"><td data-label="Group">[^<]+</td><td data-label="Through">([^<]*)</td>'
        r'<td data-label="Rules">([^<]*)</td>',
        shown,
    ) == [
        ("clockers", "clock-add", "/clock: initialize, tools/call, tools/list; tools: add"),
        ("mcp-registry-admin", "administrators: everything", "listing only"),
    ]


def test_unknown_names_are_said_and_only_administrators_look(admin_client, client, registry, member):
    assert "No user is called nobody." in page(admin_client, user="nobody")
    client.force_login(member("staffer", "clockers", is_staff=True))

    assert client.get("/admin/access/").status_code == 403


def test_blocks_limits_and_quarantines_that_apply_are_shown_for_a_user_and_a_server(admin_client, registry):
    from limits.services import limit_set, quarantine_set
    from servers.services import tool_block

    tool_block(actor=None, server=registry, name="echo", reason="leaks")
    quarantine_set(actor=None, kind="group", name="clockers", reason="audit in progress")
    limit_set(
        actor=None,
        caller_kind="user",
        caller="cleo",
        target_kind="server",
        target="/clock",
        windows=[{"per": "minute", "limit": 10}],
    )

    as_cleo = page(admin_client, user="cleo")
    clock = page(admin_client, server="/clock")

    assert re.findall(r"<ul class=\"access-restrictions\" data-caller-restrictions>(.*?)</ul>", as_cleo) == [
        '<li class="quarantine">Quarantined by an operator (group clockers): audit in progress</li>'
        '<li class="limit">Limit: 10 calls a minute for cleo on server /clock</li>'
    ]
    cell = re.search(
        r'<tr data-server="/clock">.*?<td data-label="Restricted" data-restrictions>(.*?)</td>', as_cleo
    )
    assert cell.group(1) == (
        '<div>Blocked for everyone: echo</div><div class="limit">Limit: 10 calls a minute for cleo</div>'
    )
    assert "<li>Blocked for everyone: echo</li>" in clock


def test_a_virtual_server_is_asked_about_like_a_server(admin_client, registry):
    from virtual_servers.services import virtual_server_create

    virtual_server_create(
        actor=None, path="/team", definition={"name": "Team", "members": [{"server": "/clock"}]}
    )

    shown = page(admin_client, server="/team")

    assert "Who reaches the virtual server <code>/team</code>" in shown
    assert (
        "<p data-members>It carries <code>/clock</code>: a caller also needs rights on each of them.</p>"
        in shown
    )
    assert "<option selected>/team</option>" in shown
