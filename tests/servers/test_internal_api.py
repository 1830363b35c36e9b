"""The internal administration API (/api/internal/*): HTTP Basic, form or JSON in, JSON out.

Identity-provider tests run a small fake of Keycloak's admin REST API on loopback."""

import base64
import json
import threading
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest
import redis
from django.contrib.auth.models import Group
from django.urls import reverse

from accounts.choices import SYSTEM_GROUPS, AuthMethod
from accounts.models import AuditEvent, IdpGroupMapping, IssuedToken, Scope
from accounts.principal import principal_for_user
from accounts.tokens import encode
from agents.models import Agent
from servers.choices import HealthStatus
from servers.models import Server, Tool
from servers.tasks import sweep_health_task
from tests.factories import AgentFactory, ServerFactory, ToolFactory
from virtual_servers.services import virtual_server_create

pytestmark = pytest.mark.django_db

PASSWORD = "s3cret-Password"


def basic(username, password):
    return {"Authorization": "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()}


ADMIN = basic("ops", PASSWORD)


@pytest.fixture(autouse=True)
def credentials(settings):
    settings.ADMIN_USER = "ops"
    settings.ADMIN_PASSWORD = PASSWORD


@pytest.fixture
def queue(settings, django_capture_on_commit_callbacks):
    """Health checks really queued on the (embedded) Redis broker, as a list of server ids."""

    def messages() -> list[dict]:
        return [json.loads(raw) for raw in redis.Redis.from_url(settings.REDIS_URL).lrange("celery", 0, -1)]

    def checks() -> list[int]:
        ids = []
        for message in messages():
            if message["headers"]["task"] != "servers.check_server_task":
                continue  # registrations also queue embedding work
            args, _, _ = json.loads(base64.b64decode(message["body"]))
            ids.append(args[0])
        return sorted(ids)

    class Queue:
        def capture(self):
            return django_capture_on_commit_callbacks(execute=True)

        @property
        def checks(self):
            return checks()

        @property
        def tasks(self):
            return [message["headers"]["task"] for message in messages()]

    return Queue()


def url(name):
    app = "agents-api" if name in ("add-to-groups", "remove-from-groups") else "servers-api"
    return reverse(f"{app}:internal-{name}")


def post(client, name, data=None, *, as_json=False, headers=ADMIN):
    if as_json:
        return client.post(url(name), data or {}, content_type="application/json", headers=headers)
    return client.post(url(name), data or {}, headers=headers)


def assert_error(response, status, code, detail=None):
    assert response.status_code == status
    body = response.json()
    assert body["error_code"] == code
    assert set(body) >= {"detail", "error_code", "request_id"}
    if detail is not None:
        assert body["detail"] == detail
    return body


def state():
    """Everything the internal API can change, to assert that nothing did."""
    return {
        "servers": list(Server.objects.order_by("path").values()),
        "tools": list(Tool.objects.order_by("id").values()),
        "groups": sorted(Group.objects.values_list("name", flat=True)),
        "members": sorted(Group.objects.values_list("name", "user__username")),
        "scopes": list(
            Scope.objects.order_by("name").values("name", "description", "server_rules", "ui_permissions")
        ),
        "scope_groups": sorted(Scope.groups.through.objects.values_list("scope__name", "group__name")),
        "mappings": sorted(IdpGroupMapping.objects.values_list("idp_group", "group__name")),
        "audit": AuditEvent.objects.count(),
    }


def audit_log():
    return list(AuditEvent.objects.order_by("id").values_list("actor_name", "action", "target", "detail"))


def sees(user, path, *, tool="any_tool"):
    """(listed, callable) for `user` at `path`, as listings and /validate decide."""
    principal = principal_for_user(user, auth_method=AuthMethod.SESSION)
    listed = Server.objects.visible_to(principal).filter(path=path).exists()
    return listed, principal.allows_mcp(path, "tools/call", tool)


# -- credentials, for every endpoint -----------------------------------------------------------------

ENDPOINTS = [
    (
        "post",
        "register",
        {"name": "W", "description": "d", "path": "/w", "proxy_pass_url": "http://127.0.0.1:9/"},
    ),
    ("post", "remove", {"service_path": "/weather"}),
    ("post", "toggle", {"service_path": "/weather"}),
    ("post", "healthcheck", {}),
    ("get", "list", None),
    ("post", "add-to-groups", {"server_name": "/weather", "group_names": "team-a"}),
    ("post", "remove-from-groups", {"server_name": "/weather", "group_names": "team-a"}),
    ("post", "create-group", {"group_name": "new-team"}),
    ("post", "delete-group", {"group_name": "team-a"}),
    ("get", "list-groups", None),
]


@pytest.mark.parametrize(("method", "name", "data"), ENDPOINTS, ids=[e[1] for e in ENDPOINTS])
@pytest.mark.parametrize(
    ("headers", "code"),
    [({}, "not_authenticated"), (basic("ops", "wrong"), "authentication_failed")],
    ids=["missing", "wrong"],
)
def test_every_endpoint_refuses_missing_and_wrong_credentials_and_changes_nothing(
    client, queue, member, method, name, data, headers, code
):
    ServerFactory(path="/weather")
    member("alice", "team-a")
    before = state()

    with queue.capture():
        response = getattr(client, method)(url(name), data or {}, headers=headers)

    body = assert_error(response, 401, code)
    assert set(body) == {"detail", "error_code", "request_id"}
    assert response["WWW-Authenticate"] == 'Basic realm="mcp-gateway-registry internal"'
    assert state() == before
    assert queue.checks == []


def test_a_session_of_a_superuser_is_not_enough(client, member):
    client.force_login(member("root", is_superuser=True))

    response = client.post(url("create-group"), {"group_name": "x"})

    assert_error(response, 401, "not_authenticated")
    assert not Group.objects.filter(name="x").exists()


def test_post_endpoints_refuse_get(client):
    response = client.get(url("register"), headers=ADMIN)

    assert_error(response, 405, "method_not_allowed")


# -- register -----------------------------------------------------------------------------------------

REGISTER_FORM = {
    "name": "Weather",
    "description": "Forecasts",
    "path": "weather",
    "proxy_pass_url": "http://127.0.0.1:8001/mcp",
    "tags": "weather, forecast",
    "num_stars": "4",
    "is_python": "true",
    "license": "MIT",
    "auth_type": "api_key",
    "auth_provider": "vault",
    "supported_transports": "streamable-http,sse",
    "headers": '{"X-Api-Key": "upstream-secret"}',
}


def test_register_by_form_creates_an_enabled_server_and_queues_its_health_check(client, queue):
    with queue.capture():
        response = post(client, "register", REGISTER_FORM)

    assert response.status_code == 201
    assert response.json() == {
        "message": "Server /weather registered.",
        "service": {
            "path": "/weather",
            "name": "Weather",
            "description": "Forecasts",
            "proxy_pass_url": "http://127.0.0.1:8001/mcp",
            "tags": ["weather", "forecast"],
            "num_tools": 0,
            "num_stars": 4,
            "is_python": True,
            "license": "MIT",
            "is_enabled": True,
            "health_status": "unknown",
            "health_detail": "",
            "last_checked_at": None,
            "supported_transports": ["streamable-http", "sse"],
            "auth_type": "api_key",
            "auth_provider": "vault",
            "upstream_auth": "shared_headers",
            "user_secret_header": "",
            "version": "1.0.0",
            "approve_tool_changes": False,
        },
    }
    assert "upstream-secret" not in response.content.decode()
    server = Server.objects.get()
    assert server.headers == {"X-Api-Key": "upstream-secret"}
    assert queue.checks == [server.pk]
    assert audit_log() == [("ops", "server.create", "server:/weather", {"name": "Weather"})]


def test_register_by_json_stores_the_tool_list(client, queue):
    tools = [
        {"name": "forecast", "description": "Five days", "inputSchema": {"type": "object"}},
        {"name": "alerts", "description": "Warnings"},
    ]
    body = {**REGISTER_FORM, "headers": {"X-Api-Key": "k"}, "tool_list_json": tools, "is_python": False}

    with queue.capture():
        response = post(client, "register", body, as_json=True)

    assert response.status_code == 201
    assert response.json()["service"]["num_tools"] == 2
    server = Server.objects.get()
    assert list(server.tools.order_by("name").values_list("name", "description", "input_schema")) == [
        ("alerts", "Warnings", {}),
        ("forecast", "Five days", {"type": "object"}),
    ]
    assert server.is_python is False
    assert queue.checks == [server.pk]


def test_register_accepts_tool_list_json_as_form_text(client):
    form = {**REGISTER_FORM, "tool_list_json": json.dumps([{"name": "now"}])}

    response = post(client, "register", form)

    assert response.status_code == 201
    assert list(Tool.objects.values_list("name", flat=True)) == ["now"]


def test_register_on_a_taken_path_without_overwrite_is_409_and_changes_nothing(client, queue):
    ServerFactory(path="/weather", name="Old", is_enabled=False)
    before = state()

    with queue.capture():
        response = post(client, "register", REGISTER_FORM)

    assert_error(
        response,
        409,
        "conflict",
        "A server is already registered at /weather; send overwrite=true to replace it.",
    )
    assert state() == before
    assert queue.checks == []


@pytest.mark.parametrize("overwrite", ["true", "on", "1"])
def test_register_with_overwrite_replaces_the_server_enables_it_and_answers_200(client, queue, overwrite):
    old = ServerFactory(path="/weather", name="Old", is_enabled=False)
    ToolFactory(server=old, name="stale")
    form = {**REGISTER_FORM, "overwrite": overwrite, "tool_list_json": '[{"name": "fresh"}]'}

    with queue.capture():
        response = post(client, "register", form)

    assert response.status_code == 200
    body = response.json()
    assert body["message"] == "Server /weather overwritten."
    assert (body["service"]["name"], body["service"]["is_enabled"], body["service"]["num_tools"]) == (
        "Weather",
        True,
        1,
    )
    assert Server.objects.get().pk == old.pk
    assert list(Tool.objects.values_list("name", flat=True)) == ["fresh"]
    assert queue.checks == [old.pk]
    assert [(action, target) for _, action, target, _ in audit_log()] == [
        ("server.update", "server:/weather"),
        ("server.enable", "server:/weather"),
    ]


def test_register_with_overwrite_on_a_new_path_creates_it(client):
    response = post(client, "register", {**REGISTER_FORM, "overwrite": True}, as_json=True)

    assert response.status_code == 201
    assert response.json()["message"] == "Server /weather registered."


def test_register_with_invalid_fields_is_400_with_field_errors_and_changes_nothing(client, queue):
    before = state()
    form = {
        "name": "",
        "path": "../etc",
        "proxy_pass_url": "ftp://example.test/",
        "headers": "{not json",
        "tool_list_json": '[{"description": "no name"}]',
        "num_stars": "-1",
        "overwrite": "perhaps",
    }

    with queue.capture():
        response = post(client, "register", form)

    body = assert_error(response, 400, "validation_error", "Invalid input.")
    assert sorted(body["errors"]) == [
        "description",
        "headers",
        "name",
        "num_stars",
        "overwrite",
        "path",
        "proxy_pass_url",
        "tool_list_json",
    ]
    assert state() == before
    assert queue.checks == []


DEEP = "[" * 5000 + "]" * 5000


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("headers", '{"X-Key": "a\\u0000b"}', "X-Key: NUL characters are not allowed."),
        (
            "headers",
            '{"X-Key": "\\ud800"}',
            "X-Key: Text must be valid Unicode (a lone surrogate was found).",
        ),
        ("tool_list_json", '[{"name": "n\\u0000"}]', "[0].name: NUL characters are not allowed."),
        (
            "tool_list_json",
            '[{"name": "\\udfff"}]',
            "[0].name: Text must be valid Unicode (a lone surrogate was found).",
        ),
        ("tool_list_json", DEEP, "JSON is nested deeper than 64 levels."),
        ("headers", DEEP, "JSON is nested deeper than 64 levels."),
    ],
)
def test_json_in_form_fields_follows_the_one_input_rule(client, queue, field, value, message):
    before = state()

    with queue.capture():
        response = post(client, "register", {**REGISTER_FORM, field: value})

    body = assert_error(response, 400, "validation_error", "Invalid input.")
    assert list(body["errors"]) == [field]
    assert message in body["errors"][field][0]
    assert state() == before


def test_register_with_a_malformed_json_body_is_400(client):
    response = client.post(url("register"), "{", content_type="application/json", headers=ADMIN)

    assert_error(response, 400, "bad_request")
    assert Server.objects.count() == 0


def test_register_grants_nothing_to_non_admin_groups(client, member, scope_factory):
    admin = member("root", "mcp-registry-admin")
    scope_factory(
        "team-a-scope", group="team-a", server_rules=[{"server": "/other", "methods": "*", "tools": "*"}]
    )
    alice = member("alice", "team-a")
    scopes_before = state()["scopes"]

    response = post(client, "register", REGISTER_FORM)

    assert response.status_code == 201
    assert sees(admin, "/weather") == (True, True)
    assert sees(alice, "/weather") == (False, False)
    assert state()["scopes"] == scopes_before


# -- remove ---------------------------------------------------------------------------------------------


def test_remove_deletes_the_server_its_tools_and_the_grants_naming_it(client, scope_factory):
    server = ServerFactory(path="/weather")
    ToolFactory(server=server)
    ServerFactory(path="/time")
    scope_factory(
        "group:team-a",
        group="team-a",
        server_rules=[
            {"server": "/weather", "methods": "*", "tools": "*"},
            {"server": "/time", "methods": "*", "tools": "*"},
        ],
        ui={"list_service": ["/weather", "/time"]},
    )
    scope_factory("everything", server_rules=[{"server": "*", "methods": "*", "tools": "*"}])

    response = post(client, "remove", {"service_path": "weather"})

    assert response.status_code == 200
    assert response.json() == {
        "message": "Server /weather removed.",
        "path": "/weather",
        "scopes_updated": ["group:team-a"],
    }
    assert list(Server.objects.values_list("path", flat=True)) == ["/time"]
    assert Tool.objects.count() == 0
    scope = Scope.objects.get(name="group:team-a")
    assert scope.server_rules == [{"server": "/time", "methods": "*", "tools": "*"}]
    assert scope.ui_permissions == {"list_service": ["/time"]}
    assert Scope.objects.get(name="everything").server_rules == [
        {"server": "*", "methods": "*", "tools": "*"}
    ]
    assert [(action, target, detail) for _, action, target, detail in audit_log()] == [
        ("server.delete", "server:/weather", {}),
        ("scope.update", "scope:group:team-a", {"removed_server": "/weather"}),
    ]


def test_remove_of_an_unknown_path_is_404_and_changes_nothing(client):
    ServerFactory(path="/weather")
    before = state()

    response = post(client, "remove", {"service_path": "/nope"})

    assert_error(response, 404, "not_found", "No server is registered at /nope.")
    assert state() == before


def test_remove_without_a_service_path_is_400(client):
    response = post(client, "remove", {})

    body = assert_error(response, 400, "validation_error")
    assert body["errors"] == {"service_path": ["This field is required."]}


# -- toggle ---------------------------------------------------------------------------------------------


def test_toggle_without_enabled_flips_the_state(client, queue):
    server = ServerFactory(path="/weather", is_enabled=True)

    with queue.capture():
        response = post(client, "toggle", {"service_path": "/weather"})

    assert response.status_code == 200
    assert response.json() == {
        "path": "/weather",
        "is_enabled": False,
        "message": "Server /weather disabled.",
    }
    server.refresh_from_db()
    assert (server.is_enabled, server.health_status) == (False, HealthStatus.DISABLED)
    assert queue.checks == []
    assert [action for _, action, _, _ in audit_log()] == ["server.disable"]


def test_toggle_with_enabled_true_enables_and_queues_a_health_check(client, queue):
    server = ServerFactory(path="/weather", is_enabled=False)

    with queue.capture():
        response = post(client, "toggle", {"service_path": "weather", "enabled": True}, as_json=True)

    assert response.status_code == 200
    assert response.json() == {"path": "/weather", "is_enabled": True, "message": "Server /weather enabled."}
    server.refresh_from_db()
    assert (server.is_enabled, server.health_status) == (True, HealthStatus.UNKNOWN)
    assert queue.checks == [server.pk]


def test_toggle_to_the_current_state_changes_nothing(client):
    ServerFactory(path="/weather", is_enabled=False)
    before = state()

    response = post(client, "toggle", {"service_path": "/weather", "enabled": "off"})

    assert response.status_code == 200
    assert response.json() == {
        "path": "/weather",
        "is_enabled": False,
        "message": "Server /weather disabled.",
    }
    assert state() == before


def test_toggle_of_an_unknown_path_is_404_and_changes_nothing(client):
    ServerFactory(path="/weather")
    before = state()

    response = post(client, "toggle", {"service_path": "/nope", "enabled": "true"})

    assert_error(response, 404, "not_found", "No server is registered at /nope.")
    assert state() == before


def test_toggle_with_a_non_boolean_enabled_is_400_and_changes_nothing(client):
    ServerFactory(path="/weather")
    before = state()

    response = post(client, "toggle", {"service_path": "/weather", "enabled": "maybe"})

    body = assert_error(response, 400, "validation_error")
    assert body["errors"] == {"enabled": ["Must be a valid boolean."]}
    assert state() == before


# -- healthcheck ------------------------------------------------------------------------------------------


def test_healthcheck_answers_the_stored_health_and_queues_one_sweep_of_every_enabled_server(client, queue):
    checked = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    up = ServerFactory(path="/up", health_status=HealthStatus.HEALTHY, last_checked_at=checked, num_tools=3)
    down = ServerFactory(
        path="/down",
        health_status=HealthStatus.UNHEALTHY,
        health_detail="connection refused",
        last_checked_at=checked - timedelta(minutes=1),
    )
    ServerFactory(path="/off", is_enabled=False)

    with queue.capture():
        response = post(client, "healthcheck")

    assert response.status_code == 200
    assert response.json() == {
        "services": {
            "/down": {
                "status": "unhealthy",
                "last_checked_iso": "2026-03-04T05:05:07+00:00",
                "num_tools": 0,
                "detail": "connection refused",
            },
            "/off": {"status": "disabled", "last_checked_iso": None, "num_tools": 0, "detail": ""},
            "/up": {
                "status": "healthy",
                "last_checked_iso": "2026-03-04T05:06:07+00:00",
                "num_tools": 3,
                "detail": "",
            },
        }
    }
    assert queue.tasks == ["servers.sweep_health_task"]  # it queues a check of each enabled server:

    assert sweep_health_task() == 2
    assert queue.checks == sorted([up.pk, down.pk])


def test_healthcheck_without_servers_is_an_empty_map(client):
    response = post(client, "healthcheck")

    assert response.status_code == 200
    assert response.json() == {"services": {}}


# -- list -------------------------------------------------------------------------------------------------


def test_list_answers_every_server_in_path_order_in_a_fixed_number_of_queries(
    client, django_assert_num_queries
):
    for path in ("/b", "/a", "/c"):
        ServerFactory(path=path)

    with django_assert_num_queries(2):  # the Basic user's lookup, the servers
        response = client.get(url("list"), headers=ADMIN)

    assert response.status_code == 200
    assert [s["path"] for s in response.json()["services"]] == ["/a", "/b", "/c"]
    assert list(response.json()) == ["services"]


# -- add-to-groups / remove-from-groups -------------------------------------------------------------------


def test_add_to_groups_lets_members_list_and_call_the_server(client, member):
    ServerFactory(path="/weather")
    ServerFactory(path="/time")
    alice, bob, carol = member("alice", "team-a"), member("bob", "team-b"), member("carol", "team-c")

    response = post(client, "add-to-groups", {"server_name": "weather", "group_names": "team-a, team-b"})

    assert response.status_code == 200
    assert response.json() == {
        "message": "Server /weather added to groups: team-a, team-b.",
        "server_path": "/weather",
        "groups": ["team-a", "team-b"],
        "changed": ["team-a", "team-b"],
    }
    scope = Scope.objects.get(name="group:team-a")
    assert scope.server_rules == [{"server": "/weather", "methods": "*", "tools": "*"}]
    assert scope.ui_permissions == {"list_service": ["/weather"]}
    assert list(scope.groups.values_list("name", flat=True)) == ["team-a"]
    assert sees(alice, "/weather") == (True, True)
    assert sees(bob, "/weather") == (True, True)
    assert sees(alice, "/time") == (False, False)
    assert sees(carol, "/weather") == (False, False)
    assert audit_log() == [
        ("ops", "group.server_grant", "group:team-a", {"server": "/weather", "scope": "group:team-a"}),
        ("ops", "group.server_grant", "group:team-b", {"server": "/weather", "scope": "group:team-b"}),
    ]


def test_a_granted_member_passes_validate_for_the_server_and_no_other(client, member):
    ServerFactory(path="/weather")
    ServerFactory(path="/time")
    alice = member("alice", "team-a")
    post(client, "add-to-groups", {"server_name": "/weather", "group_names": "team-a"})
    encoded = encode(
        username="alice",
        scopes=["group:team-a"],
        groups=["team-a"],
        admin=False,
        lifetime=timedelta(hours=1),
        kind="user",
    )
    IssuedToken.objects.create(jti=encoded.jti, user=alice, kind="user", expires_at=encoded.expires_at)
    call = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "forecast"}})

    def validate(server):
        return client.get(
            "/validate",
            headers={
                "Authorization": f"Bearer {encoded.token}",
                "X-Original-URL": f"https://gw.example.test{server}/mcp",
                "X-Body": call,
            },
        ).status_code

    assert (validate("/weather"), validate("/time")) == (200, 403)


def test_add_to_groups_keeps_the_scope_s_other_rules_and_is_idempotent(client, scope_factory):
    ServerFactory(path="/weather")
    scope_factory(
        "group:team-a",
        group="team-a",
        server_rules=[
            {"server": "/time", "methods": ["tools/list"], "tools": []},
            {"server": "/weather", "methods": ["initialize"], "tools": []},
        ],
        ui={"list_service": ["/time"], "toggle_service": ["/time"]},
    )
    first = post(client, "add-to-groups", {"server_name": "/weather", "group_names": "team-a"})
    audit_after_first = AuditEvent.objects.count()

    second = post(client, "add-to-groups", {"server_name": "/weather", "group_names": "team-a"})

    assert first.json()["changed"] == ["team-a"]
    assert second.status_code == 200
    assert second.json()["changed"] == []
    scope = Scope.objects.get(name="group:team-a")
    assert scope.server_rules == [
        {"server": "/time", "methods": ["tools/list"], "tools": []},
        {"server": "/weather", "methods": "*", "tools": "*"},
    ]
    assert scope.ui_permissions == {"list_service": ["/time", "/weather"], "toggle_service": ["/time"]}
    assert AuditEvent.objects.count() == audit_after_first == 1


@pytest.mark.parametrize("name", ["add-to-groups", "remove-from-groups"])
def test_group_edits_of_an_unknown_server_are_404_and_change_nothing(client, member, name):
    member("alice", "team-a")
    before = state()

    response = post(client, name, {"server_name": "ghost", "group_names": "team-a"})

    assert_error(response, 404, "not_found", "No server, virtual server or agent is registered at /ghost.")
    assert state() == before


def test_a_group_is_given_an_internal_agent_and_its_members_see_it(client, member):
    alice = member("alice", "team-a")
    agent = AgentFactory(path="/helper", visibility="internal", is_enabled=True, owner=member("owner"))
    unseen = Agent.objects.visible_to(principal_for_user(alice, auth_method=AuthMethod.SESSION)).exists()

    given = post(client, "add-to-groups", {"server_name": "helper", "group_names": "team-a"})
    again = post(client, "add-to-groups", {"server_name": "/helper", "group_names": "team-a"})
    seen = Agent.objects.visible_to(principal_for_user(alice, auth_method=AuthMethod.SESSION)).exists()
    taken = post(client, "remove-from-groups", {"server_name": "/helper", "group_names": "team-a"})

    assert unseen is False
    assert (given.status_code, given.json()) == (
        200,
        {
            "message": "Agent /helper added to groups: team-a.",
            "agent_path": "/helper",
            "groups": ["team-a"],
            "changed": ["team-a"],
        },
    )
    assert again.json()["changed"] == []
    assert seen is True
    assert (taken.status_code, taken.json()["changed"]) == (200, ["team-a"])
    assert list(agent.groups.all()) == []
    assert [(action, target, detail) for _, action, target, detail in audit_log()] == [
        ("group.agent_grant", "group:team-a", {"agent": "/helper"}),
        ("group.agent_revoke", "group:team-a", {"agent": "/helper"}),
    ]


def test_a_private_agent_is_given_to_no_group(client, member):
    member("alice", "team-a")
    agent = AgentFactory(path="/diary", visibility="private", owner=member("owner"))

    response = post(client, "add-to-groups", {"server_name": "/diary", "group_names": "team-a"})

    assert_error(
        response,
        409,
        "conflict",
        "The agent at /diary is private: its owner alone sees it. Make it internal to share it with groups.",
    )
    assert list(agent.groups.all()) == [] and audit_log() == []


def test_a_group_is_given_a_virtual_server(client, member):
    ServerFactory(path="/weather")
    virtual_server_create(
        actor=None, path="/team", definition={"name": "Team", "members": [{"server": "/weather"}]}
    )
    alice = member("alice", "team-a")

    response = post(client, "add-to-groups", {"server_name": "/team", "group_names": "team-a"})

    assert (response.status_code, response.json()["message"]) == (
        200,
        "Virtual server /team added to groups: team-a.",
    )
    assert Scope.objects.get(name="group:team-a").server_rules == [
        {"server": "/team", "methods": "*", "tools": "*"}
    ]
    assert alice.groups.get().scopes.get().name == "group:team-a"


@pytest.mark.parametrize("name", ["add-to-groups", "remove-from-groups"])
def test_group_edits_naming_unknown_groups_are_404_naming_them_and_change_nothing(client, member, name):
    ServerFactory(path="/weather")
    member("alice", "team-a")
    before = state()

    response = post(client, name, {"server_name": "/weather", "group_names": "team-a,phantom,ghost"})

    assert_error(response, 404, "not_found", "Unknown groups: phantom, ghost.")
    assert state() == before


def test_one_unknown_group_is_named_in_the_singular(client):
    ServerFactory(path="/weather")

    response = post(client, "add-to-groups", {"server_name": "/weather", "group_names": "ghost"})

    assert_error(response, 404, "not_found", "Unknown group: ghost.")


@pytest.mark.parametrize("group_names", ["", " , ,"])
def test_group_edits_without_group_names_are_400(client, group_names):
    ServerFactory(path="/weather")

    response = post(client, "add-to-groups", {"server_name": "/weather", "group_names": group_names})

    body = assert_error(response, 400, "validation_error")
    assert list(body["errors"]) == ["group_names"]


def test_remove_from_groups_takes_the_server_out_of_the_group_s_own_scope(client, member):
    ServerFactory(path="/weather")
    ServerFactory(path="/time")
    alice, bob = member("alice", "team-a"), member("bob", "team-b")
    post(client, "add-to-groups", {"server_name": "/weather", "group_names": "team-a,team-b"})
    post(client, "add-to-groups", {"server_name": "/time", "group_names": "team-a"})

    response = post(
        client, "remove-from-groups", {"server_name": "/weather", "group_names": ["team-a"]}, as_json=True
    )

    assert response.status_code == 200
    assert response.json() == {
        "message": "Server /weather removed from groups: team-a.",
        "server_path": "/weather",
        "groups": ["team-a"],
        "changed": ["team-a"],
        "still_granted_by": {},
    }
    scope = Scope.objects.get(name="group:team-a")
    assert scope.server_rules == [{"server": "/time", "methods": "*", "tools": "*"}]
    assert scope.ui_permissions == {"list_service": ["/time"]}
    assert sees(alice, "/weather") == (False, False)
    assert sees(alice, "/time") == (True, True)
    assert sees(bob, "/weather") == (True, True)
    assert audit_log()[-1] == (
        "ops",
        "group.server_revoke",
        "group:team-a",
        {"server": "/weather", "scope": "group:team-a"},
    )


def test_remove_from_groups_is_idempotent_and_names_other_scopes_still_granting(
    client, member, scope_factory
):
    ServerFactory(path="/weather")
    alice = member("alice", "team-a")
    scope_factory("all-servers", group="team-a", server_rules=[{"server": "*", "methods": "*", "tools": "*"}])
    before = state()

    response = post(client, "remove-from-groups", {"server_name": "/weather", "group_names": "team-a"})

    assert response.status_code == 200
    assert response.json()["changed"] == []
    assert response.json()["still_granted_by"] == {"team-a": ["all-servers"]}
    assert state() == before
    assert sees(alice, "/weather") == (True, True)


# -- create-group / delete-group ----------------------------------------------------------------------------


def test_create_group_creates_the_group_and_its_own_scope(client):
    response = post(client, "create-group", {"group_name": "team-a", "description": "The A team"})

    assert response.status_code == 200
    assert response.json() == {
        "message": "Group 'team-a' created.",
        "group_name": "team-a",
        "description": "The A team",
        "idp": None,
    }
    scope = Scope.objects.get(name="group:team-a")
    assert (scope.description, scope.server_rules, scope.ui_permissions) == ("The A team", [], {})
    assert list(scope.groups.values_list("name", flat=True)) == ["team-a"]
    assert IdpGroupMapping.objects.count() == 0
    assert audit_log() == [
        ("ops", "group.create", "group:team-a", {"description": "The A team", "idp": None}),
    ]


def test_create_group_of_an_existing_name_is_409_and_changes_nothing(client, member):
    member("alice", "team-a")
    before = state()

    response = post(client, "create-group", {"group_name": "team-a"})

    assert_error(response, 409, "conflict", "Group 'team-a' already exists.")
    assert state() == before


@pytest.mark.parametrize("name", ["", "a,b", "x" * 145])
def test_create_group_with_an_invalid_name_is_400_and_changes_nothing(client, name):
    response = post(client, "create-group", {"group_name": name})

    body = assert_error(response, 400, "validation_error")
    assert list(body["errors"]) == ["group_name"]
    assert not Group.objects.exclude(name__in=SYSTEM_GROUPS).exists()


def test_create_group_in_the_idp_without_an_idp_admin_api_is_400_and_creates_nothing(client):
    before = state()

    response = post(client, "create-group", {"group_name": "team-a", "create_in_idp": "true"})

    assert_error(
        response,
        400,
        "idp_not_configured",
        "Cannot create the group in the identity provider: no identity-provider admin API is configured "
        "(KEYCLOAK_URL, KEYCLOAK_ADMIN_CLIENT_ID and KEYCLOAK_ADMIN_CLIENT_SECRET).",
    )
    assert state() == before


def test_delete_group_deletes_the_group_and_its_own_scope(client, scope_factory):
    post(client, "create-group", {"group_name": "team-a"})
    shared = scope_factory("shared", group="team-a")
    shared.groups.add(Group.objects.create(name="team-b"))

    response = post(client, "delete-group", {"group_name": "team-a"})

    assert response.status_code == 200
    assert response.json() == {
        "message": "Group 'team-a' deleted.",
        "group_name": "team-a",
        "members_removed": 0,
        "idp": None,
    }
    assert sorted(Group.objects.exclude(name__in=SYSTEM_GROUPS).values_list("name", flat=True)) == ["team-b"]
    assert list(Scope.objects.values_list("name", flat=True)) == ["shared"]
    assert audit_log()[-1] == (
        "ops",
        "group.delete",
        "group:team-a",
        {"members": 0, "forced": False, "idp": None},
    )


@pytest.mark.parametrize("name", ["mcp-registry-admin", "mcp-registry-user"])
def test_delete_group_refuses_system_groups_with_403(client, member, name):
    member("root", name)
    before = state()

    response = post(client, "delete-group", {"group_name": name, "force": "true"})

    assert_error(response, 403, "permission_denied", f"'{name}' is a system group and cannot be deleted.")
    assert state() == before


def test_delete_group_with_members_is_409_unless_forced(client, member):
    alice, bob = member("alice", "team-a", "team-b"), member("bob", "team-a")
    before = state()

    refused = post(client, "delete-group", {"group_name": "team-a"})

    assert_error(
        refused, 409, "conflict", "Group 'team-a' has 2 member(s); pass force=true to delete it anyway."
    )
    assert state() == before

    forced = post(client, "delete-group", {"group_name": "team-a", "force": "on"})

    assert forced.status_code == 200
    assert forced.json()["members_removed"] == 2
    assert list(alice.groups.values_list("name", flat=True)) == ["team-b"]
    assert list(bob.groups.values_list("name", flat=True)) == []
    assert audit_log()[-1] == (
        "ops",
        "group.delete",
        "group:team-a",
        {"members": 2, "forced": True, "idp": None},
    )


def test_delete_group_of_an_unknown_name_is_404_and_changes_nothing(client, member):
    member("alice", "team-a")
    before = state()

    response = post(client, "delete-group", {"group_name": "ghost"})

    assert_error(response, 404, "not_found", "Unknown group: ghost.")
    assert state() == before


def test_delete_group_from_the_idp_without_an_idp_admin_api_is_400_and_deletes_nothing(client):
    Group.objects.create(name="team-a")
    before = state()

    response = post(client, "delete-group", {"group_name": "team-a", "delete_from_idp": True}, as_json=True)

    assert_error(response, 400, "idp_not_configured")
    assert state() == before


# -- a fake Keycloak admin API on loopback ---------------------------------------------------------------


class FakeKeycloak:
    """The token and group endpoints of Keycloak's admin REST API, for one realm and one admin client."""

    realm = "test-realm"
    client_id = "registry-admin"
    client_secret = "kc-secret"
    token = "kc-admin-token"

    def __init__(self, groups=()):
        self.groups = [self.group_record(name) for name in groups]
        self.requests = []  # (method, path, query, form or JSON body, authorization)
        self.fail_token = False
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self, status, body=None):
                raw = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _handle(self):
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode() if length else ""
                body = (
                    {k: v[0] for k, v in parse_qs(raw).items()}
                    if "form" in str(self.headers.get("Content-Type"))
                    else (json.loads(raw) if raw else None)
                )
                request = (self.command, parts.path, query, body, self.headers.get("Authorization"))
                fake.requests.append(request)
                self._answer(*fake.answer(*request))

            do_GET = do_POST = do_DELETE = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @staticmethod
    def group_record(name, *subgroup_paths):
        return {
            "id": f"id-{name}",
            "name": name,
            "path": f"/{name}",
            "subGroups": [
                {"id": f"id-{p}", "name": p.rsplit("/", 1)[1], "path": p, "subGroups": []}
                for p in subgroup_paths
            ],
        }

    def answer(self, method, path, query, body, authorization):
        admin = f"/admin/realms/{self.realm}/groups"
        if method == "POST" and path == f"/realms/{self.realm}/protocol/openid-connect/token":
            good = body == {
                "grant_type": "client_credentials",
                "client_id": self.client_id,
                "client_secret": self.client_secret,
            }
            if self.fail_token or not good:
                return 401, {"error": "unauthorized_client"}
            return 200, {"access_token": self.token, "token_type": "Bearer", "expires_in": 60}
        if authorization != f"Bearer {self.token}":
            return 401, {"error": "HTTP 401 Unauthorized"}
        if method == "GET" and path == admin:
            groups = self.groups
            if "search" in query:
                groups = [g for g in groups if g["name"] == query["search"]]
            first, size = int(query.get("first", 0)), int(query.get("max", 100))
            return 200, groups[first : first + size]
        if method == "POST" and path == admin:
            if any(g["name"] == body["name"] for g in self.groups):
                return 409, {"errorMessage": "Top level group named already exists."}
            self.groups.append(self.group_record(body["name"]))
            return 201, None
        if method == "DELETE" and path.startswith(f"{admin}/"):
            group_id = path.rsplit("/", 1)[1]
            kept = [g for g in self.groups if g["id"] != group_id]
            if len(kept) == len(self.groups):
                return 404, None
            self.groups = kept
            return 204, None
        return 404, None

    @property
    def group_names(self):
        return sorted(g["name"] for g in self.groups)

    def configure(self, settings):
        settings.KEYCLOAK_URL = self.url
        settings.KEYCLOAK_REALM = self.realm
        settings.KEYCLOAK_ADMIN_CLIENT_ID = self.client_id
        settings.KEYCLOAK_ADMIN_CLIENT_SECRET = self.client_secret

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def keycloak(settings):
    fake = FakeKeycloak(groups=["team-a", "idp-team"])
    fake.configure(settings)
    yield fake
    fake.close()


@pytest.fixture
def unreachable_keycloak(settings, free_port):
    """Keycloak configured at a loopback port nothing listens on."""
    settings.KEYCLOAK_URL = f"http://127.0.0.1:{free_port}"
    settings.KEYCLOAK_REALM = "test-realm"
    settings.KEYCLOAK_ADMIN_CLIENT_ID = "registry-admin"
    settings.KEYCLOAK_ADMIN_CLIENT_SECRET = "kc-secret"
    return settings.KEYCLOAK_URL


def test_create_group_in_the_idp_creates_it_there_and_maps_it(client, keycloak):
    response = post(client, "create-group", {"group_name": "team-b", "create_in_idp": "true"})

    assert response.status_code == 200
    assert response.json()["idp"] == "created"
    assert keycloak.group_names == ["idp-team", "team-a", "team-b"]
    assert list(IdpGroupMapping.objects.values_list("idp_group", "group__name")) == [("team-b", "team-b")]
    token_request, create_request = keycloak.requests
    assert token_request[:2] == ("POST", "/realms/test-realm/protocol/openid-connect/token")
    assert create_request == (
        "POST",
        "/admin/realms/test-realm/groups",
        {},
        {"name": "team-b"},
        "Bearer kc-admin-token",
    )


def test_create_group_already_in_the_idp_links_to_it(client, keycloak):
    response = post(client, "create-group", {"group_name": "team-a", "create_in_idp": "true"})

    assert response.status_code == 200
    assert response.json()["idp"] == "existing"
    assert keycloak.group_names == ["idp-team", "team-a"]
    assert Group.objects.filter(name="team-a").exists()


def test_create_group_in_an_unreachable_idp_is_502_and_creates_nothing(client, unreachable_keycloak):
    before = state()

    response = post(client, "create-group", {"group_name": "team-b", "create_in_idp": "true"})

    body = assert_error(response, 502, "idp_unavailable")
    assert body["detail"].startswith(f"Keycloak at {unreachable_keycloak} did not answer:")
    assert body["detail"].endswith("Nothing was changed.")
    assert "kc-secret" not in body["detail"]
    assert state() == before


def test_delete_group_from_the_idp_deletes_it_there_too(client, keycloak):
    Group.objects.create(name="team-a")

    response = post(client, "delete-group", {"group_name": "team-a", "delete_from_idp": "true"})

    assert response.status_code == 200
    assert response.json()["idp"] == "deleted"
    assert keycloak.group_names == ["idp-team"]
    assert not Group.objects.filter(name="team-a").exists()


def test_delete_group_absent_from_the_idp_says_so(client, keycloak):
    Group.objects.create(name="local")

    response = post(client, "delete-group", {"group_name": "local", "delete_from_idp": "true"})

    assert response.status_code == 200
    assert response.json()["idp"] == "absent"
    assert keycloak.group_names == ["idp-team", "team-a"]


def test_delete_group_when_the_idp_refuses_is_502_and_deletes_nothing(client, keycloak):
    Group.objects.create(name="team-a")
    keycloak.fail_token = True
    before = state()

    response = post(client, "delete-group", {"group_name": "team-a", "delete_from_idp": "true"})

    assert_error(
        response,
        502,
        "idp_unavailable",
        "Keycloak refused the admin client's credentials (HTTP 401). Nothing was changed.",
    )
    assert state() == before
    assert keycloak.group_names == ["idp-team", "team-a"]


# -- list-groups -------------------------------------------------------------------------------------


@pytest.fixture
def registry_groups(client, member, scope_factory):
    """team-a (2 members, own scope granting /weather, mapped to its IdP group), local (no members)."""
    ServerFactory(path="/weather")
    post(client, "create-group", {"group_name": "team-a", "description": "The A team"})
    post(client, "add-to-groups", {"server_name": "/weather", "group_names": "team-a"})
    IdpGroupMapping.objects.create(idp_group="team-a", group=Group.objects.get(name="team-a"))
    scope_factory("readers", group="team-a", ui={"list_service": ["all"]}, publish_names=["com.acme/*"])
    member("alice", "team-a")
    member("bob", "team-a")
    Group.objects.create(name="local")


TEAM_A_SCOPES = [
    {
        "name": "group:team-a",
        "description": "The A team",
        "server_rules": [{"server": "/weather", "methods": "*", "tools": "*"}],
        "ui_permissions": {"list_service": ["/weather"]},
        "publish_names": [],
    },
    {
        "name": "readers",
        "description": "",
        "server_rules": [],
        "ui_permissions": {"list_service": ["all"]},
        "publish_names": ["com.acme/*"],
    },
]


def team_a(sync_status, **extra):
    return {
        "name": "team-a",
        "description": "The A team",
        "system": False,
        "members_count": 2,
        "idp_groups": ["team-a"],
        "sync_status": sync_status,
        **extra,
    }


def own(groups: list[dict]) -> list[dict]:
    """The listed groups but the system groups every registry has from its first start."""
    return [group for group in groups if not group["system"]]


def local(sync_status, **extra):
    return {
        "name": "local",
        "description": "",
        "system": False,
        "members_count": 0,
        "idp_groups": [],
        "sync_status": sync_status,
        **extra,
    }


def test_list_groups_without_an_idp_lists_registry_groups_with_scopes(
    client, registry_groups, django_assert_num_queries
):
    with django_assert_num_queries(4):  # the Basic user's lookup, groups, their mappings, their scopes
        response = client.get(url("list-groups"), headers=ADMIN)

    assert response.status_code == 200
    body = response.json()
    assert (body["idp_configured"], body["idp_error"]) == (False, None)
    assert own(body["groups"]) == [local(None, scopes=[]), team_a(None, scopes=TEAM_A_SCOPES)]


def test_list_groups_without_scopes_leaves_them_out(client, registry_groups):
    response = client.get(url("list-groups"), {"include_scopes": "false"}, headers=ADMIN)

    assert response.status_code == 200
    assert own(response.json()["groups"]) == [local(None), team_a(None)]


def test_list_groups_marks_each_group_against_the_idp(client, registry_groups, keycloak):
    response = client.get(url("list-groups"), headers=ADMIN)

    assert response.status_code == 200
    body = response.json()
    assert {**body, "groups": own(body["groups"])} == {
        "groups": [
            {
                "name": "idp-team",
                "description": "",
                "system": False,
                "members_count": 0,
                "idp_groups": [],
                "sync_status": "idp_only",
                "scopes": [],
            },
            local("registry_only", scopes=[]),
            team_a("synchronized", scopes=TEAM_A_SCOPES),
        ],
        "idp_configured": True,
        "idp_error": None,
    }
    token_request, groups_request = keycloak.requests
    assert token_request == (
        "POST",
        "/realms/test-realm/protocol/openid-connect/token",
        {},
        {"grant_type": "client_credentials", "client_id": "registry-admin", "client_secret": "kc-secret"},
        None,
    )
    assert groups_request == (
        "GET",
        "/admin/realms/test-realm/groups",
        {"first": "0", "max": "100", "briefRepresentation": "true"},
        None,
        "Bearer kc-admin-token",
    )


def test_list_groups_reads_every_page_of_idp_groups(client, keycloak):
    keycloak.groups = [keycloak.group_record(f"g{n:03d}") for n in range(150)]

    response = client.get(url("list-groups"), {"include_scopes": "0"}, headers=ADMIN)

    names = [group["name"] for group in own(response.json()["groups"])]
    assert names == [f"g{n:03d}" for n in range(150)]
    assert [request[2].get("first") for request in keycloak.requests[1:]] == ["0", "100"]


def test_list_groups_matches_idp_subgroups_by_their_path(client, keycloak):
    keycloak.groups = [keycloak.group_record("org", "/org/ops", "/org/dev")]
    ops = Group.objects.create(name="operators")
    IdpGroupMapping.objects.create(idp_group="/org/ops", group=ops)

    response = client.get(url("list-groups"), {"include_scopes": "false"}, headers=ADMIN)

    assert [(group["name"], group["sync_status"]) for group in own(response.json()["groups"])] == [
        ("/org/dev", "idp_only"),
        ("operators", "synchronized"),
        ("org", "idp_only"),
    ]


def test_list_groups_with_include_keycloak_false_does_not_ask_the_idp(client, registry_groups, keycloak):
    response = client.get(
        url("list-groups"), {"include_keycloak": "false", "include_scopes": "false"}, headers=ADMIN
    )

    body = response.json()
    assert {**body, "groups": own(body["groups"])} == {
        "groups": [local(None), team_a(None)],
        "idp_configured": True,
        "idp_error": None,
    }
    assert keycloak.requests == []


def test_list_groups_with_an_unreachable_idp_lists_registry_groups_and_the_error(
    client, registry_groups, unreachable_keycloak
):
    response = client.get(url("list-groups"), {"include_scopes": "false"}, headers=ADMIN)

    assert response.status_code == 200
    body = response.json()
    assert own(body["groups"]) == [local(None), team_a(None)]
    assert body["idp_configured"] is True
    assert body["idp_error"].startswith(f"Keycloak at {unreachable_keycloak} did not answer:")


def test_list_groups_with_refused_idp_credentials_reports_the_error(client, registry_groups, keycloak):
    keycloak.fail_token = True

    response = client.get(url("list-groups"), {"include_scopes": "false"}, headers=ADMIN)

    assert response.status_code == 200
    assert response.json()["idp_error"] == "Keycloak refused the admin client's credentials (HTTP 401)."
    assert {group["sync_status"] for group in response.json()["groups"]} == {None}


def test_list_groups_with_a_non_boolean_parameter_is_400(client):
    response = client.get(url("list-groups"), {"include_keycloak": "perhaps"}, headers=ADMIN)

    body = assert_error(response, 400, "validation_error")
    assert body["errors"] == {"include_keycloak": ["Must be a valid boolean."]}


def test_list_groups_marks_system_groups_which_exist_from_the_first_start(client, member):
    member("root", "mcp-registry-admin")

    response = client.get(url("list-groups"), {"include_scopes": "false"}, headers=ADMIN)

    def system(name: str, members: int) -> dict:
        return {
            "name": name,
            "description": "",
            "system": True,
            "members_count": members,
            "idp_groups": [],
            "sync_status": None,
        }

    assert response.json()["groups"] == [
        system("mcp-registry-admin", 1),
        system("mcp-registry-developer", 0),
        system("mcp-registry-operator", 0),
        system("mcp-registry-public", 0),
        system("mcp-registry-user", 0),
    ]
