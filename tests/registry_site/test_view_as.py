""" "View as this user": an administrator sees the console with another user's rights on every surface, read
only (nothing can be changed, no tool called through the gateway), until stopped; starting and stopping
are audited."""

import json
import re

import pytest

from accounts.models import AuditEvent
from servers.models import Server
from tests.factories import ServerFactory, ToolFactory
from tests.gateway.gateway_calls import gateway_fixture, post  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def cleo(member, scope_factory):
    clock = ServerFactory(path="/clock", name="Clock")
    ServerFactory(path="/secret", name="Secret")
    ToolFactory(server=clock, name="add")
    rules = [{"server": "/clock", "methods": ["initialize", "tools/list", "tools/call"], "tools": ["add"]}]
    scope_factory("clock-add", group="clockers", server_rules=rules)
    return member("cleo", "clockers")


def listed(client) -> list[str]:
    return [server["path"] for server in client.get("/api/servers").json()["servers"]]


def csrf_of(client) -> str:
    page = client.get("/").content.decode()
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)


def start(client, username: str):
    return client.post("/admin/access/view-as", {"user": username})


def test_the_access_page_offers_to_view_as_the_user_and_every_surface_then_shows_their_rights(
    admin_client, cleo
):
    offered = admin_client.get("/admin/access/", {"user": "cleo"}).content.decode()
    before = listed(admin_client)

    started = start(admin_client, "cleo")
    dashboard = admin_client.get("/").content.decode()

    assert 'value="View the console as cleo"' in offered
    assert before == ["/clock", "/secret"]
    assert (started.status_code, started["Location"]) == (302, "/")
    assert listed(admin_client) == ["/clock"]
    assert 'data-viewing-as="cleo"' in dashboard
    assert admin_client.get("/servers/secret").status_code == 404
    assert admin_client.get("/admin/access/").status_code == 403  # cleo is no administrator
    started_rows = AuditEvent.objects.filter(action="access.view_as", target="user:cleo")
    assert [row.actor_name for row in started_rows] == ["admin"]


def test_nothing_can_be_changed_while_viewing_but_stopping_which_is_audited(admin_client, cleo):
    start(admin_client, "cleo")
    token = csrf_of(admin_client)

    toggled = admin_client.post("/api/toggle/clock", {"enabled": "off"}, headers={"X-CSRFToken": token})
    edited = admin_client.post("/api/servers/register", {"path": "/new", "name": "New"})
    admin_post = admin_client.post("/admin/servers/server/add/", {"path": "/other", "name": "Other"})
    stopped = admin_client.post("/view-as/stop")

    assert (toggled.status_code, toggled.json()["error_code"]) == (403, "viewing_as")
    assert toggled.json()["detail"] == (
        "You are viewing the console as another user, read only: stop viewing to make changes."
    )
    assert edited.status_code == 403
    assert admin_post.status_code == 403
    assert b"read only: stop viewing" in admin_post.content
    assert sorted(Server.objects.values_list("path", "is_enabled")) == [("/clock", True), ("/secret", True)]
    assert (stopped.status_code, stopped["Location"]) == (302, "/admin/access/?user=cleo")
    assert listed(admin_client) == ["/clock", "/secret"]
    assert "data-viewing-as" not in admin_client.get("/").content.decode()
    assert AuditEvent.objects.filter(action="access.view_as_stop", target="user:cleo").count() == 1


def test_the_gateway_refuses_a_viewing_session(gateway, admin_client, cleo):
    start(admin_client, "cleo")
    session = admin_client.cookies["sessionid"].value
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add", "arguments": {}}}

    status, _, body = post(gateway.port, "/clock/mcp", call, {"Cookie": f"sessionid={session}"})

    assert (status, json.loads(body)["error_code"]) == (403, "viewing_as")


def test_only_an_administrator_starts_viewing_and_only_as_an_active_user(client, admin_client, member, cleo):
    client.force_login(member("staffer", "clockers", is_staff=True))
    member("gone", "clockers", is_active=False)

    by_staff = start(client, "cleo")
    inactive = start(admin_client, "gone")

    assert by_staff.status_code == 403
    assert inactive.status_code == 404
    assert listed(client) == ["/clock"]
    assert AuditEvent.objects.filter(action="access.view_as").count() == 0
