"""Tokens narrowed to one server and chosen tools, for every user, administrators included: what they
may call through the real gateway, what they see, and what cannot be asked for."""

import pytest

from accounts.authentication import principal_from_bearer
from accounts.models import AuditEvent, IssuedToken
from servers.models import Server
from tests.factories import ServerFactory
from tests.gateway.gateway_calls import gateway_fixture, list_and_call, run  # noqa: F401
from tests.mcp_servers import time_server_fixture  # noqa: F401

pytestmark = pytest.mark.django_db


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def generate(client, body):
    return client.post("/api/tokens/generate", body, content_type="application/json")


def _with_tools(path, *names, **fields):
    server = ServerFactory(path=path, **fields)
    for name in names:
        server.tools.create(name=name, description=f"{name} tool")
    return server


@pytest.fixture
def admin(member):
    return member("ada", "mcp-registry-admin")


@pytest.mark.django_db(transaction=True)
def test_an_admins_token_for_one_server_and_two_tools_calls_those_and_nothing_else(
    client, admin, gateway, time_server
):
    _with_tools("/clock", "add", "current_time", "echo", proxy_pass_url=time_server)
    _with_tools("/other", "add")
    client.force_login(admin)

    answer = generate(client, {"server": "/clock", "tools": ["add", "echo"], "description": "walk"})
    token = answer.json()["access_token"]
    tools, added, denied = run(gateway.url("/clock/mcp"), token, list_and_call)
    elsewhere = principal_from_bearer(token)

    assert answer.status_code == 200
    assert (tools, added) == (["add", "echo"], "5")
    assert denied == "Access denied: 'ada' may not call tool 'current_time' on server '/clock'."
    assert elsewhere.is_admin is False
    assert list(Server.objects.visible_to(elsewhere).values_list("path", flat=True)) == ["/clock"]
    assert elsewhere.allows_mcp("/other", "tools/call", "add") is False
    assert client.get("/api/admin/tokens", headers=bearer(token)).status_code == 403
    issued = IssuedToken.objects.get(description="walk")
    assert (issued.is_admin, issued.reach) == (
        False,
        {"server": "/clock", "tools": ["add", "echo"], "all": True},
    )
    audit = AuditEvent.objects.filter(action="token.issue").latest("pk")
    assert (audit.detail["admin"], audit.detail["reach"]) == (False, issued.reach)


def test_a_members_token_for_one_server_keeps_within_their_own_rules(client, member, scope_factory):
    _with_tools("/clock", "add", "current_time", "echo")
    rules = [
        {"server": "/clock", "methods": ["initialize", "tools/list", "tools/call"], "tools": ["add", "echo"]}
    ]
    scope_factory("clock-some", group="clockers", server_rules=rules)
    client.force_login(member("cleo", "clockers"))

    narrowed = generate(client, {"server": "/clock", "tools": ["echo"]})
    every = generate(client, {"server": "/clock"})
    beyond = generate(client, {"server": "/clock", "tools": ["add", "current_time"]})

    one, all_mine = (principal_from_bearer(answer.json()["access_token"]) for answer in (narrowed, every))
    assert one.shown_tools("/clock") == frozenset({"echo"})
    assert one.allows_mcp("/clock", "tools/call", "add") is False
    assert one.allows_mcp("/clock", "tools/list") is True
    assert all_mine.shown_tools("/clock") == frozenset({"add", "echo"})
    assert beyond.status_code == 403
    assert beyond.json()["detail"] == "You may not call current_time on /clock."


@pytest.mark.parametrize(
    ("body", "status", "detail"),
    [
        ({"server": "/nowhere"}, 404, "No server is registered at /nowhere."),
        ({"server": "/clock", "tools": ["ad"]}, 400, "/clock has no tool ad; its tools: add, echo."),
        ({"tools": ["add"]}, 400, "Name the server the tools are on."),
        (
            {"server": "/clock", "requested_scopes": ["anything"]},
            400,
            "Ask for one server or for scopes, not both.",
        ),
        (
            {"admin": True, "server": "/clock"},
            400,
            "A token that administers is not narrowed: leave out requested_scopes, server and tools.",
        ),
    ],
)
def test_requests_for_a_narrowed_token_that_cannot_be_met_are_refused(client, admin, body, status, detail):
    _with_tools("/clock", "add", "echo")
    client.force_login(admin)

    answer = generate(client, body)

    assert (answer.status_code, answer.json()["detail"]) == (status, detail)
    assert IssuedToken.objects.count() == 0


def test_only_administrators_may_ask_for_a_token_that_administers(client, member):
    client.force_login(member("cleo", "clockers"))

    answer = generate(client, {"admin": True})

    assert answer.status_code == 403
    assert answer.json()["detail"] == "Only administrators can make a token that administers."


def test_a_token_made_by_a_narrowed_token_is_narrowed_the_same(client, admin):
    _with_tools("/clock", "add", "echo")
    client.force_login(admin)
    parent = generate(client, {"server": "/clock", "tools": ["add"]}).json()["access_token"]
    client.logout()

    child = client.post(
        "/api/tokens/generate", {}, content_type="application/json", headers=bearer(parent)
    ).json()["access_token"]
    wider = client.post(
        "/api/tokens/generate",
        {"server": "/clock", "tools": ["echo"]},
        content_type="application/json",
        headers=bearer(parent),
    )

    assert principal_from_bearer(child).reach == principal_from_bearer(parent).reach
    assert principal_from_bearer(child).shown_tools("/clock") == frozenset({"add"})
    assert wider.status_code == 403


def test_a_narrowed_admin_token_follows_its_holder_losing_administration(client, admin):
    _with_tools("/clock", "add", "echo")
    client.force_login(admin)
    token = generate(client, {"server": "/clock", "tools": ["add"]}).json()["access_token"]
    admin.groups.clear()

    principal = principal_from_bearer(token)

    assert principal.allows_mcp("/clock", "tools/call", "add") is False
    assert list(Server.objects.visible_to(principal)) == []
