"""The Django admin as the operator console: every model listed, searchable, filterable; bulk
actions go through the services (and so are audited); secrets and the audit trail stay untouchable."""

import pytest
from django.urls import reverse

from accounts.choices import AuditAction
from accounts.models import AuditEvent
from accounts.services import audit_event_record
from agents.models import Agent
from servers.choices import HealthStatus
from servers.models import Server
from tests.factories import AgentFactory, ServerFactory, ToolFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "url_name",
    [
        "admin:servers_server_changelist",
        "admin:servers_tool_changelist",
        "admin:servers_healthtransition_changelist",
        "admin:agents_agent_changelist",
        "admin:accounts_auditevent_changelist",
        "admin:accounts_user_changelist",
        "admin:accounts_scope_changelist",
        "admin:servers_server_add",
        "admin:agents_agent_add",
    ],
)
def test_every_admin_page_renders(admin_client, url_name):
    assert admin_client.get(reverse(url_name)).status_code == 200


def test_admin_requires_staff_login(client):
    UserFactory(username="plain")
    client.login(username="plain", password="correct horse battery staple")

    response = client.get(reverse("admin:servers_server_changelist"))

    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_server_search_and_filters(admin_client):
    ServerFactory(path="/weather", name="Weather", is_enabled=True, health_status=HealthStatus.HEALTHY)
    ServerFactory(path="/currenttime", name="Current Time", is_enabled=False)
    url = reverse("admin:servers_server_changelist")

    searched = admin_client.get(url, {"q": "weath"})
    disabled = admin_client.get(url, {"is_enabled__exact": "0"})
    healthy = admin_client.get(url, {"health_status__exact": "healthy"})

    assert [s.path for s in searched.context["cl"].result_list] == ["/weather"]
    assert [s.path for s in disabled.context["cl"].result_list] == ["/currenttime"]
    assert [s.path for s in healthy.context["cl"].result_list] == ["/weather"]


def test_tool_and_agent_and_audit_search(admin_client):
    ToolFactory(name="get_forecast", server__path="/weather")
    ToolFactory(name="current_time", server__path="/clock")
    AgentFactory(path="/translator", name="Translator")
    AgentFactory(path="/summarizer", name="Summarizer")
    audit_event_record(actor=None, action=AuditAction.SERVER_CREATE, target="server:/weather")
    audit_event_record(actor=None, action=AuditAction.AGENT_CREATE, target="agent:/translator")

    tools = admin_client.get(reverse("admin:servers_tool_changelist"), {"q": "forecast"})
    agents = admin_client.get(reverse("admin:agents_agent_changelist"), {"q": "transl"})
    audit = admin_client.get(
        reverse("admin:accounts_auditevent_changelist"), {"action__exact": "agent.create"}
    )

    assert [t.name for t in tools.context["cl"].result_list] == ["get_forecast"]
    assert [a.path for a in agents.context["cl"].result_list] == ["/translator"]
    assert [e.target for e in audit.context["cl"].result_list] == ["agent:/translator"]


def test_bulk_disable_calls_the_service_and_is_audited(admin_client, admin_user):
    ServerFactory(path="/a", is_enabled=True)
    ServerFactory(path="/b", is_enabled=True)
    ServerFactory(path="/c", is_enabled=False)

    response = admin_client.post(
        reverse("admin:servers_server_changelist"),
        {"action": "disable_selected", "_selected_action": list(Server.objects.values_list("pk", flat=True))},
    )

    assert response.status_code == 302
    assert list(Server.objects.filter(is_enabled=True)) == []
    assert set(Server.objects.values_list("health_status", flat=True)) == {HealthStatus.DISABLED}
    assert sorted(AuditEvent.objects.values_list("actor_name", "action", "target")) == [
        (admin_user.username, "server.disable", "server:/a"),
        (admin_user.username, "server.disable", "server:/b"),
    ]


def test_bulk_enable_agents_is_audited(admin_client):
    AgentFactory(path="/x")

    admin_client.post(
        reverse("admin:agents_agent_changelist"),
        {"action": "enable_selected", "_selected_action": list(Agent.objects.values_list("pk", flat=True))},
    )

    assert Agent.objects.get().is_enabled is True
    assert list(AuditEvent.objects.values_list("action", flat=True)) == ["agent.enable"]


def test_adding_a_server_in_the_admin_goes_through_the_service(admin_client, admin_user):
    response = admin_client.post(
        reverse("admin:servers_server_add"),
        {
            "path": "/added",
            "name": "Added",
            "description": "",
            "proxy_pass_url": "http://127.0.0.1:8001/mcp",
            "tags": "a,b",
            "num_stars": "0",
            "license": "MIT",
            "is_enabled": "on",
            "supported_transports": "streamable-http",
            "auth_type": "none",
            "upstream_auth": "none",
            "auth_provider": "",
            "version": "1.0.0",
            "tools-TOTAL_FORMS": "0",
            "tools-INITIAL_FORMS": "0",
        },
    )

    assert response.status_code == 302
    server = Server.objects.get(path="/added")
    assert (server.tags, server.is_enabled, server.health_status, server.registered_by) == (
        ["a", "b"],
        True,
        HealthStatus.UNKNOWN,
        admin_user,
    )
    assert list(AuditEvent.objects.values_list("action", "target")) == [("server.create", "server:/added")]


def test_editing_a_server_in_the_admin_audits_the_changed_fields(admin_client):
    server = ServerFactory(path="/edit-me", name="Before", is_enabled=True)

    response = admin_client.post(
        reverse("admin:servers_server_change", args=[server.pk]),
        {
            "name": "After",
            "description": server.description,
            "proxy_pass_url": server.proxy_pass_url,
            "tags": "test",
            "num_stars": "0",
            "license": server.license,
            "supported_transports": "",
            "auth_type": "none",
            "upstream_auth": "none",
            "auth_provider": "",
            "version": "1.0.0",
            "tools-TOTAL_FORMS": "0",
            "tools-INITIAL_FORMS": "0",
        },
    )

    assert response.status_code == 302
    server.refresh_from_db()
    assert (server.name, server.is_enabled) == ("After", False)
    assert list(AuditEvent.objects.order_by("id").values_list("action", "detail")) == [
        ("server.update", {"fields": ["name"]}),
        ("server.disable", {}),
    ]


def test_the_server_page_shows_header_names_but_never_their_values(admin_client):
    server = ServerFactory(headers={"Authorization": "Bearer do-not-show-me"})

    page = admin_client.get(reverse("admin:servers_server_change", args=[server.pk])).content.decode()
    listing = admin_client.get(reverse("admin:servers_server_changelist")).content.decode()

    assert "Authorization" in page
    assert "do-not-show-me" not in page
    assert "do-not-show-me" not in listing


def test_audit_events_are_read_only_in_the_admin(admin_client):
    event = audit_event_record(actor=None, action=AuditAction.SERVER_CREATE, target="server:/a")

    add = admin_client.get(reverse("admin:accounts_auditevent_add"))
    delete = admin_client.post(reverse("admin:accounts_auditevent_delete", args=[event.pk]), {"post": "yes"})
    change = admin_client.post(
        reverse("admin:accounts_auditevent_change", args=[event.pk]), {"target": "server:/forged"}
    )

    assert add.status_code == 403
    assert delete.status_code == 403
    assert change.status_code == 403
    assert list(AuditEvent.objects.values_list("target", flat=True)) == ["server:/a"]


def test_tools_are_read_only_in_the_admin(admin_client):
    tool = ToolFactory()

    assert admin_client.get(reverse("admin:servers_tool_add")).status_code == 403
    response = admin_client.post(reverse("admin:servers_tool_delete", args=[tool.pk]), {"post": "yes"})

    assert response.status_code == 403
    assert type(tool).objects.count() == 1


@pytest.mark.parametrize(
    ("url_name", "build"),
    [
        ("admin:servers_server_changelist", lambda: ServerFactory(registered_by=UserFactory())),
        ("admin:servers_tool_changelist", lambda: ToolFactory()),
        ("admin:agents_agent_changelist", lambda: AgentFactory()),
        (
            "admin:accounts_auditevent_changelist",
            lambda: audit_event_record(actor=UserFactory(), action=AuditAction.SERVER_CREATE, target="s:/x"),
        ),
    ],
)
def test_changelist_queries_do_not_grow_with_rows(
    admin_client, django_assert_max_num_queries, url_name, build
):
    for _ in range(3):
        build()
    admin_client.get(reverse(url_name))  # warm the session and content types
    with django_assert_max_num_queries(12) as few:
        admin_client.get(reverse(url_name))
    for _ in range(20):
        build()

    with django_assert_max_num_queries(len(few.captured_queries)):
        admin_client.get(reverse(url_name))


def test_adding_a_scope_in_the_admin_is_audited(admin_client):
    from accounts.models import Scope
    from tests.factories import GroupFactory

    group = GroupFactory(name="readers")

    response = admin_client.post(
        reverse("admin:accounts_scope_add"),
        {
            "name": "read-all",
            "description": "Read every server",
            "server_rules-rows": "1",  # the structured form (accounts/admin_forms.py)
            "server_rules-0-server": "*",
            "server_rules-0-methods": ["tools/list"],
            "server_rules-0-tools": "*",
            "ui_permissions-list_service": "all",
            "groups": [group.pk],
        },
    )

    assert response.status_code == 302
    scope = Scope.objects.get()
    assert scope.server_rules == [{"server": "*", "methods": ["tools/list"], "tools": "*"}]
    assert scope.ui_permissions == {"list_service": ["all"]}
    assert list(scope.groups.values_list("name", flat=True)) == ["readers"]
    assert list(AuditEvent.objects.order_by("pk").values_list("action", "target", "detail")) == [
        (
            "scope.create",
            "scope:read-all",
            {
                "description": "Read every server",
                "server_rules": [{"server": "*", "methods": ["tools/list"], "tools": "*"}],
                "ui_permissions": {"list_service": ["all"]},
                "publish_names": [],
            },
        ),
        ("scope.groups", "scope:read-all", {"groups_added": ["readers"], "groups_removed": []}),
    ]
