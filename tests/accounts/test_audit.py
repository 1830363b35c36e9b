import pytest

from accounts.choices import AuditAction
from accounts.models import AuditEvent
from accounts.services import audit_event_record
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_audit_events_cannot_be_changed_or_deleted():
    event = audit_event_record(actor=None, action=AuditAction.SERVER_CREATE, target="server:/a")

    event.target = "server:/b"
    with pytest.raises(PermissionError):
        event.save()
    with pytest.raises(PermissionError):
        event.delete()
    with pytest.raises(PermissionError):
        AuditEvent.objects.update(target="server:/c")
    with pytest.raises(PermissionError):
        AuditEvent.objects.all().delete()

    assert list(AuditEvent.objects.values_list("target", flat=True)) == ["server:/a"]


def test_deleting_a_user_keeps_their_audit_events_with_the_name():
    user = UserFactory(username="leaver")
    audit_event_record(actor=user, action=AuditAction.AGENT_CREATE, target="agent:/x")

    user.delete()

    event = AuditEvent.objects.get()
    assert (event.actor_id, event.actor_name, event.action) == (None, "leaver", "agent.create")
