import pytest
from django.core.exceptions import ValidationError

from accounts.models import AuditEvent
from agents import services
from agents.models import Agent
from tests.factories import AgentFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_agent_create_makes_the_caller_owner_and_starts_disabled():
    owner = UserFactory(username="alice")

    agent = services.agent_create(
        actor=owner,
        path="/summarizer",
        name="Summarizer",
        description="Summarizes documents",
        url="http://127.0.0.1:9100/",
        version="1.0.0",
        tags=["nlp"],
    )

    assert (agent.owner, agent.is_enabled, agent.embedding_dirty, agent.visibility) == (
        owner,
        False,
        True,
        "public",
    )
    assert list(AuditEvent.objects.values_list("actor_name", "action", "target")) == [
        ("alice", "agent.create", "agent:/summarizer")
    ]


def test_agent_create_rejects_an_unknown_visibility_and_writes_nothing():
    with pytest.raises(ValidationError) as caught:
        services.agent_create(
            actor=None,
            path="/x",
            name="X",
            description="d",
            url="http://127.0.0.1:9100/",
            version="1",
            visibility="everyone",
        )

    assert list(caught.value.message_dict) == ["visibility"]
    assert Agent.objects.count() == 0
    assert AuditEvent.objects.count() == 0


def test_agent_update_marks_the_embedding_dirty_only_for_text_changes():
    agent = AgentFactory(embedding_dirty=False)

    services.agent_update(actor=None, agent=agent, license="MIT")
    after_license = Agent.objects.get(pk=agent.pk).embedding_dirty
    services.agent_update(actor=None, agent=agent, description="Now with translation")

    assert after_license is False
    assert Agent.objects.get(pk=agent.pk).embedding_dirty is True
    assert [event.detail for event in AuditEvent.objects.order_by("id")] == [
        {"fields": ["license"]},
        {"fields": ["description"]},
    ]


def test_agent_toggle_and_delete_are_audited():
    agent = AgentFactory(path="/toggled")

    services.agent_toggle(actor=None, agent=agent, enabled=True)
    services.agent_delete(actor=None, agent=agent)

    assert Agent.objects.count() == 0
    assert list(AuditEvent.objects.order_by("id").values_list("action", "target")) == [
        ("agent.enable", "agent:/toggled"),
        ("agent.delete", "agent:/toggled"),
    ]


def test_an_admin_can_publish_an_agent_on_behalf_of_an_owner():
    admin = UserFactory(username="ops")
    owner = UserFactory(username="team-lead")

    agent = services.agent_create(
        actor=admin,
        owner=owner,
        path="/delegated",
        name="Delegated",
        description="d",
        url="http://127.0.0.1:9100/",
        version="1",
    )

    assert agent.owner == owner
    assert list(AuditEvent.objects.values_list("actor_name", flat=True)) == ["ops"]
