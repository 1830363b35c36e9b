"""Writes for agents. Every surface (agent API, admin) calls these."""

from django.db import transaction

from accounts.choices import AuditAction
from accounts.models import User
from accounts.services import actor_user, audit_event_record
from agents.models import Agent
from registry_site.services import apply_changes, require_editable

EDITABLE_FIELDS = (
    "name",
    "description",
    "url",
    "version",
    "provider",
    "security_schemes",
    "skills",
    "tags",
    "visibility",
    "license",
)
# Changing any of these changes what semantic search should find.
EMBEDDED_FIELDS = {"name", "description", "skills", "tags"}


def _target(agent: Agent) -> str:
    return f"agent:{agent.path}"


def agent_create(*, actor: User | None, path: str, owner: User | None = None, **fields) -> Agent:
    """Publish an agent card; it starts disabled and owned by `owner`, by default the caller."""
    require_editable(fields, EDITABLE_FIELDS)
    if owner is None:
        owner = actor_user(actor)
    agent = Agent(
        path=path,
        is_enabled=False,
        owner=owner,
        embedding_dirty=True,
        **fields,
    )
    agent.full_clean()
    with transaction.atomic():
        agent.save()
        audit_event_record(
            actor=actor, action=AuditAction.AGENT_CREATE, target=_target(agent), detail={"name": agent.name}
        )
    return agent


def agent_update(*, actor: User | None, agent: Agent, **fields) -> Agent:
    """Change an agent card; text changes mark the embedding dirty for the embedding task."""
    require_editable(fields, EDITABLE_FIELDS)
    changed = apply_changes(agent, fields)
    if not changed:
        return agent
    update_fields = [*changed, "updated_at"]
    if EMBEDDED_FIELDS.intersection(changed):
        agent.embedding_dirty = True
        update_fields.append("embedding_dirty")
    agent.full_clean()
    with transaction.atomic():
        agent.save(update_fields=update_fields)
        audit_event_record(
            actor=actor, action=AuditAction.AGENT_UPDATE, target=_target(agent), detail={"fields": changed}
        )
    return agent


def agent_toggle(*, actor: User | None, agent: Agent, enabled: bool) -> Agent:
    if agent.is_enabled == enabled:
        return agent
    agent.is_enabled = enabled
    with transaction.atomic():
        agent.save(update_fields=["is_enabled", "updated_at"])
        audit_event_record(
            actor=actor,
            action=AuditAction.AGENT_ENABLE if enabled else AuditAction.AGENT_DISABLE,
            target=_target(agent),
        )
    return agent


def agent_delete(*, actor: User | None, agent: Agent) -> None:
    target = _target(agent)
    with transaction.atomic():
        agent.delete()
        audit_event_record(actor=actor, action=AuditAction.AGENT_DELETE, target=target)
