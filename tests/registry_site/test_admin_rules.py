"""The operator console asks the registry's rules (each app's policies.py, through the caller's Principal),
never Django's model permissions: a staff member sees and changes in the admin exactly what the APIs and
pages let them, and what no rule names is for registry administrators."""

import re

import pytest
from django.contrib.auth.models import Permission

from accounts.models import AuditEvent
from servers.models import Server
from tests.factories import AgentFactory, ServerFactory, ToolFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def servers(db):
    weather = ServerFactory(path="/weather", name="Weather")
    clock = ServerFactory(path="/clock", name="Clock")
    ToolFactory(server=weather, name="get_forecast")
    ToolFactory(server=clock, name="get_time")
    return weather, clock


@pytest.fixture
def weather_staff(client, member, scope_factory):
    """Staff who may see, change and toggle /weather, and nothing else."""
    scope_factory(
        "weather-ops",
        group="weather-ops",
        ui={"list_service": ["/weather"], "modify_service": ["/weather"], "toggle_service": ["/weather"]},
    )
    client.force_login(member("wes", "weather-ops", is_staff=True))
    return client


def listed(response) -> list[str]:
    return re.findall(r'<th class="field-\w+"><a href="[^"]+">([^<]+)</a></th>', response.content.decode())


def test_a_staff_member_sees_the_servers_and_tools_their_scopes_show(weather_staff, servers):
    server_list = weather_staff.get("/admin/servers/server/")
    tool_list = weather_staff.get("/admin/servers/tool/")
    weather, clock = servers

    assert (server_list.status_code, listed(server_list)) == (200, ["/weather"])
    assert (tool_list.status_code, listed(tool_list)) == (200, ["get_forecast"])
    assert weather_staff.get(f"/admin/servers/server/{weather.pk}/change/").status_code == 200
    # Unseen, so "does not exist": the admin sends the caller back to the index.
    assert weather_staff.get(f"/admin/servers/server/{clock.pk}/change/").status_code == 302


def test_a_staff_member_changes_only_what_their_scopes_let_them(weather_staff, servers):
    weather, clock = servers

    changed = weather_staff.post(
        "/admin/servers/server/",
        {"action": "disable_selected", "_selected_action": [weather.pk, clock.pk]},
    )

    assert changed.status_code == 302
    assert dict(Server.objects.values_list("path", "is_enabled")) == {"/weather": False, "/clock": True}
    assert AuditEvent.objects.filter(target="server:/weather").count() == 1
    assert weather_staff.get("/admin/servers/server/add/").status_code == 403  # no register_service
    assert weather_staff.get(f"/admin/servers/server/{weather.pk}/delete/").status_code == 403  # admins'


def test_django_model_permissions_grant_nothing(client, member, servers):
    staff = member("mo", is_staff=True)
    staff.user_permissions.set(Permission.objects.filter(content_type__app_label__in=["servers", "accounts"]))
    client.force_login(staff)

    assert client.get("/admin/servers/server/").status_code == 403
    assert client.get("/admin/accounts/user/").status_code == 403
    assert "Servers" not in client.get("/admin/").content.decode()


def test_accounts_are_for_registry_administrators(client, member):
    client.force_login(member("ada", "mcp-registry-admin", is_staff=True))

    assert client.get("/admin/accounts/user/").status_code == 200
    assert client.get("/admin/accounts/scope/").status_code == 200
    assert client.get("/admin/oauth2_provider/accesstoken/").status_code == 200
    assert client.get("/admin/metrics/plots/").status_code == 200


def test_other_packages_models_follow_the_same_rule(weather_staff):
    assert weather_staff.get("/admin/oauth2_provider/accesstoken/").status_code == 403
    assert weather_staff.get("/admin/accounts/user/").status_code == 403


def test_a_staff_member_sees_the_agents_visibility_shows_and_changes_none_without_a_grant(weather_staff):
    AgentFactory(path="/public-agent", visibility="public")
    AgentFactory(path="/private-agent", visibility="private")

    agents = weather_staff.get("/admin/agents/agent/")
    public = AgentFactory._meta.model.objects.get(path="/public-agent")
    change_page = weather_staff.get(f"/admin/agents/agent/{public.pk}/change/").content.decode()

    assert listed(agents) == ["/public-agent"]
    assert 'name="_save"' not in change_page  # seen, not changed: no modify_agent


def test_the_tool_counts_of_the_server_list_and_page_follow_the_tool_rule(client, member, scope_factory):
    clock = ServerFactory(path="/clock", name="Clock", num_tools=3)
    weather = ServerFactory(path="/weather", name="Weather", num_tools=1)
    for name in ("add", "current_time", "echo"):
        ToolFactory(server=clock, name=name)
    ToolFactory(server=weather, name="get_forecast")
    scope_factory(
        "clock-some",
        group="clockers",
        ui={"list_service": ["/clock", "/weather"], "modify_service": ["/clock"]},
        server_rules=[{"server": "/clock", "methods": ["tools/call"], "tools": ["add", "echo"]}],
    )
    client.force_login(member("cleo", "clockers", is_staff=True))

    server_list = client.get("/admin/servers/server/").content.decode()
    page = client.get(f"/admin/servers/server/{clock.pk}/change/").content.decode()

    counts = re.findall(
        r'<th class="field-path"><a [^>]+>([^<]+)</a></th>.*?<td class="field-tools_shown">(\d+)</td>',
        server_list,
        re.S,
    )
    assert counts == [("/clock", "2"), ("/weather", "1")]
    assert re.search(r'<div class="readonly">(\d+)</div>', page.split("tools_shown")[1]).group(1) == "2"
