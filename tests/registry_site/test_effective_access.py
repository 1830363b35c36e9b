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
        r'<tr data-server="([^"]+)"><td><code>[^<]+</code></td>'
        r"<td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td>",
        shown,
    )
    assert rows == [("/clock", "initialize, tools/list, tools/call", "add", "add")]
    assert "<p data-publish>com.acme/*</p>" in shown
    assert AuditEvent.objects.filter(action="access.view", target="user:cleo").count() == 1


def test_a_servers_reach_names_the_groups_and_their_rules(admin_client, registry):
    shown = page(admin_client, server="/clock")

    assert re.findall(r'<tr data-group="([^"]+)"><td>[^<]+</td><td>([^<]*)</td><td>([^<]*)</td>', shown) == [
        ("clockers", "clock-add", "/clock: initialize, tools/call, tools/list; tools: add"),
        ("mcp-registry-admin", "administrators: everything", "listing only"),
    ]


def test_unknown_names_are_said_and_only_administrators_look(admin_client, client, registry, member):
    assert "No user is called nobody." in page(admin_client, user="nobody")
    client.force_login(member("staffer", "clockers", is_staff=True))

    assert client.get("/admin/access/").status_code == 403
