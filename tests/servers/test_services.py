import pytest
from django.core.exceptions import ValidationError

from accounts.models import AuditEvent
from servers import services
from servers.choices import HealthStatus
from servers.models import Server
from tests.factories import ServerFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_server_create_saves_the_server_and_one_audit_event():
    actor = UserFactory(username="operator")

    server = services.server_create(
        actor=actor,
        path="/currenttime",
        name="Current Time",
        proxy_pass_url="http://127.0.0.1:8001/mcp",
        tags=["time", "utility"],
        headers={"Authorization": "Bearer upstream-secret"},
        is_enabled=True,
    )

    server.refresh_from_db()
    assert server.health_status == HealthStatus.UNKNOWN
    assert server.version == "1.0.0"
    assert server.registered_by == actor
    assert server.tags == ["time", "utility"]
    event = AuditEvent.objects.get()
    assert (event.actor, event.actor_name, event.action, event.target) == (
        actor,
        "operator",
        "server.create",
        "server:/currenttime",
    )
    assert event.detail == {"name": "Current Time"}


def test_a_disabled_server_starts_as_disabled_not_unknown():
    server = services.server_create(
        actor=None, path="/off", name="Off", proxy_pass_url="http://127.0.0.1:8001/mcp"
    )

    assert server.is_enabled is False
    assert server.health_status == HealthStatus.DISABLED
    assert AuditEvent.objects.get().actor_name == "system"


@pytest.mark.parametrize(
    "path",
    [
        "currenttime",
        "/Upper",
        "/a//b",
        "/",
        "/..",
        "/a/../b",
        "/with space",
        "/q?x=1",
        "/f#x",
        "/a.b",
        "/" + "x" * 150,
    ],
)
def test_server_create_rejects_a_bad_path_and_writes_nothing(path):
    with pytest.raises(ValidationError) as caught:
        services.server_create(actor=None, path=path, name="Bad", proxy_pass_url="http://127.0.0.1:1/mcp")

    assert "path" in caught.value.message_dict
    assert Server.objects.count() == 0
    assert AuditEvent.objects.count() == 0


def test_server_create_rejects_a_duplicate_path_and_writes_nothing_more():
    ServerFactory(path="/dup")

    with pytest.raises(services.ServerConflict, match="A server is already registered at /dup."):
        services.server_create(actor=None, path="/dup", name="Again", proxy_pass_url="http://127.0.0.1:1/mcp")

    assert Server.objects.count() == 1
    assert AuditEvent.objects.count() == 0


def test_server_create_refuses_health_fields():
    with pytest.raises(TypeError, match="not editable: health_status"):
        services.server_create(
            actor=None, path="/x", name="X", proxy_pass_url="http://127.0.0.1:1/mcp", health_status="healthy"
        )


def test_server_update_audits_changed_field_names_but_never_header_values():
    server = ServerFactory(path="/weather", name="Weather", headers={"X-Api-Key": "old-secret"})

    services.server_update(
        actor=None, server=server, name="Weather v2", headers={"X-Api-Key": "new-secret"}, num_stars=0
    )

    server.refresh_from_db()
    assert server.name == "Weather v2"
    assert server.headers == {"X-Api-Key": "new-secret"}
    event = AuditEvent.objects.get()
    assert event.action == "server.update"
    assert event.detail == {"fields": ["headers", "name"]}
    assert "secret" not in str(event.detail)


def test_server_update_without_changes_writes_no_audit_event():
    server = ServerFactory(name="Same")

    services.server_update(actor=None, server=server, name="Same")

    assert AuditEvent.objects.count() == 0


def test_server_toggle_sets_status_and_audits_each_real_change():
    server = ServerFactory(is_enabled=True, health_status=HealthStatus.HEALTHY)

    services.server_toggle(actor=None, server=server, enabled=False)
    services.server_toggle(actor=None, server=server, enabled=False)  # no change, no event
    disabled_status = Server.objects.get(pk=server.pk).health_status
    services.server_toggle(actor=None, server=server, enabled=True)

    server.refresh_from_db()
    assert disabled_status == HealthStatus.DISABLED
    assert server.is_enabled is True
    assert server.health_status == HealthStatus.UNKNOWN
    assert list(AuditEvent.objects.order_by("id").values_list("action", flat=True)) == [
        "server.disable",
        "server.enable",
    ]


def test_server_delete_removes_the_server_and_its_tools_and_audits():
    from tests.factories import ToolFactory

    tool = ToolFactory(server__path="/gone")

    services.server_delete(actor=None, server=tool.server)

    assert Server.objects.count() == 0
    assert not type(tool).objects.exists()
    assert AuditEvent.objects.get().target == "server:/gone"
