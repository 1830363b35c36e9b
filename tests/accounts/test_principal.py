"""The permission model: scopes through groups, explicit admin, and one visible_to for listings."""

import pytest

from accounts.choices import AuthMethod
from accounts.principal import ANONYMOUS, principal_for_user
from agents.models import Agent
from servers.models import Server
from tests.factories import AgentFactory, ServerFactory

pytestmark = pytest.mark.django_db


def principal(user, **kwargs):
    return principal_for_user(user, auth_method=AuthMethod.SESSION, **kwargs)


def test_scopes_come_from_groups_and_grant_ui_permissions_per_path(member, scope_factory):
    scope_factory("ops", group="operators", ui={"toggle_service": ["time"], "list_service": ["all"]})
    scope_factory("unused", group="others", ui={"modify_service": ["all"]})
    user = member("olga", "operators")

    p = principal(user)

    assert p.scopes == ("ops",)
    assert p.groups == ("operators",)
    assert p.is_admin is False
    assert p.can("toggle_service", "/time") is True
    assert p.can("toggle_service", "time") is True
    assert p.can("toggle_service", "/weather") is False
    assert p.can("modify_service", "/time") is False
    assert p.can("list_service", "/anything") is True


def test_a_wildcard_server_rule_does_not_make_an_admin(member, scope_factory):
    scope_factory(
        "read-all", group="readers", server_rules=[{"server": "*", "methods": ["tools/list"], "tools": "*"}]
    )
    reader = member("rita", "readers")

    p = principal(reader)

    assert p.is_admin is False
    assert p.allows_mcp("/anything", "tools/list") is True
    assert p.allows_mcp("/anything", "tools/call", "delete_everything") is False
    assert p.can("toggle_service", "/anything") is False


def test_admin_is_a_superuser_or_a_member_of_the_admin_group(member):
    assert principal(member("root", is_superuser=True)).is_admin is True
    assert principal(member("ada", "mcp-registry-admin")).is_admin is True
    assert principal(member("bob", "mcp-registry-user")).is_admin is False
    assert principal(member("gone", "mcp-registry-admin", is_active=False)).is_admin is False


def test_tools_call_needs_the_tool_in_the_rule(member, scope_factory):
    scope_factory(
        "time-exec",
        group="timers",
        server_rules=[{"server": "currenttime", "methods": ["initialize", "tools/call"], "tools": ["now"]}],
    )
    p = principal(member("tim", "timers"))

    assert p.allows_mcp("/currenttime", "initialize") is True
    assert p.allows_mcp("/currenttime", "tools/call", "now") is True
    assert p.allows_mcp("/currenttime", "tools/call", "shutdown") is False
    assert p.allows_mcp("/currenttime", "tools/list") is False
    assert p.allows_mcp("/weather", "initialize") is False


def test_token_scopes_narrow_the_users_current_scopes(member, scope_factory):
    scope_factory("a", group="g", ui={"list_service": ["one"]})
    scope_factory("b", group="g", ui={"list_service": ["two"]})
    user = member("uma", "g", "mcp-registry-admin")

    narrowed = principal(user, token_scopes=["a", "not-held"], token_admin=False)

    assert narrowed.scopes == ("a",)
    assert narrowed.is_admin is False
    assert narrowed.can("list_service", "/one") is True
    assert narrowed.can("list_service", "/two") is False


def test_servers_visible_to_follow_list_permission_and_server_rules(member, scope_factory):
    for path in ("/one", "/two", "/three", "/four"):
        ServerFactory(path=path)
    scope_factory("lister", group="g", ui={"list_service": ["one"]})
    scope_factory(
        "caller", group="g", server_rules=[{"server": "two", "methods": ["initialize"], "tools": []}]
    )
    user = member("vic", "g")

    def paths(p):
        return list(Server.objects.visible_to(p).values_list("path", flat=True))

    assert paths(principal(user)) == ["/one", "/two"]
    assert paths(principal(member("boss", "mcp-registry-admin"))) == ["/four", "/one", "/three", "/two"]
    assert paths(ANONYMOUS) == []


def test_agents_visible_to_by_visibility(member):
    owner = member("owen", "team-a")
    teammate = member("tess", "team-a")
    stranger = member("sam", "team-b")
    AgentFactory(path="/public-on", visibility="public", is_enabled=True, owner=owner)
    AgentFactory(path="/public-off", visibility="public", is_enabled=False, owner=owner)
    AgentFactory(path="/private", visibility="private", owner=owner)
    AgentFactory(path="/internal", visibility="internal", owner=owner)
    shared = AgentFactory(path="/shared", visibility="internal", owner=stranger)
    shared.groups.add(*owner.groups.all())

    def paths(p):
        return sorted(Agent.objects.visible_to(p).values_list("path", flat=True))

    assert paths(ANONYMOUS) == ["/public-on"]
    assert paths(principal(owner)) == ["/internal", "/private", "/public-off", "/public-on", "/shared"]
    assert paths(principal(teammate)) == ["/internal", "/public-off", "/public-on", "/shared"]
    assert paths(principal(stranger)) == ["/public-off", "/public-on", "/shared"]
    assert len(paths(principal(member("root", is_superuser=True)))) == 5


@pytest.mark.parametrize("written", ["Weather", "/weather/", " weather ", "/WEATHER", "weather"])
def test_a_rule_names_a_server_however_its_path_is_written(member, scope_factory, written):
    scope_factory(
        "w",
        group="g",
        server_rules=[{"server": written, "methods": ["tools/call"], "tools": ["forecast"]}],
        ui={"toggle_service": [written]},
    )
    p = principal(member("wendy", "g"))

    assert p.allows_mcp("/weather", "tools/call", "forecast") is True
    assert p.can("toggle_service", "/weather") is True
    assert p.server_visibility() == (False, frozenset({"/weather"}))


def test_other_methods_need_a_rule_naming_them_or_granting_every_method_and_tool(member, scope_factory):
    scope_factory(
        "s",
        group="g",
        server_rules=[
            {"server": "/a", "methods": ["*"], "tools": ["add"]},
            {"server": "/b", "methods": ["acme/report"], "tools": []},
            {"server": "/c", "methods": ["*"], "tools": ["*"]},
        ],
    )
    p = principal(member("otto", "g"))

    assert p.allows_other_mcp("/a", "Tools/Call") is False
    assert p.allows_other_mcp("/b", "acme/report") is True
    assert p.allows_other_mcp("/b", "acme/other") is False
    assert p.allows_other_mcp("/c", "Tools/Call") is True
