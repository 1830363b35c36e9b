"""Writes for agents. Every surface (agent API, agents page, admin) calls these; who may ask for each is
decided in agents/policies.py."""

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from accounts.choices import AuditAction
from accounts.models import User
from accounts.services import actor_user, audit_event_record
from agents.models import CARD_PROTOCOL_FIELDS, Agent
from core.embeddings import EMBED_AGENTS_TASK, embed_after_commit
from core.services import apply_changes, require_editable

EDITABLE_FIELDS = (
    "name",
    "description",
    "url",
    "version",
    "provider",
    "provider_organization",
    "provider_url",
    *CARD_PROTOCOL_FIELDS,
    "skills",
    "tags",
    "visibility",
    "license",
)
# Changing any of these changes what semantic search should find.
EMBEDDED_FIELDS = {"name", "description", "skills", "tags"}
# Fields a full replacement (PUT) keeps when the new card omits them: omitting a field must never
# widen who sees an agent.
KEPT_WHEN_OMITTED = {"visibility"}


class AgentConflict(Exception):
    """An agent is already registered at the path."""


def _target(agent: Agent) -> str:
    return f"agent:{agent.path}"


def _embed_after_commit(agent: Agent) -> None:
    """Embed `agent` once the surrounding transaction commits (core.embeddings.embed_after_commit)."""
    embed_after_commit(EMBED_AGENTS_TASK, [agent.pk])


# -- writes -----------------------------------------------------------------------------------------


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
        _embed_after_commit(agent)
    return agent


def agent_register(*, actor, path: str, **fields) -> Agent:
    """Publish a card at a path nobody uses yet (the agent API's register); the caller owns it.

    Raises AgentConflict when the path is taken, also when another request wins a race for it."""
    conflict = AgentConflict(f"An agent is already registered at {path}.")
    if Agent.objects.filter(path=path).exists():
        raise conflict
    try:
        return agent_create(actor=actor, path=path, **fields)
    except ValidationError as exc:  # full_clean() saw a row that appeared after the check above
        path_errors = getattr(exc, "error_dict", {}).get("path", [])
        if any(error.code == "unique" for error in path_errors):
            raise conflict from None
        raise
    except IntegrityError:  # ...or the unique index did, at save()
        if Agent.objects.filter(path=path).exists():
            raise conflict from None
        raise


def agent_update(*, actor: User | None, agent: Agent, **fields) -> Agent:
    """Change an agent card; text changes mark the embedding dirty and queue the embedding task."""
    require_editable(fields, EDITABLE_FIELDS)
    changed = apply_changes(agent, fields)
    if not changed:
        return agent
    update_fields = [*changed, "updated_at"]
    embedded_changed = bool(EMBEDDED_FIELDS.intersection(changed))
    if embedded_changed:
        agent.embedding_dirty = True
        update_fields.append("embedding_dirty")
    agent.full_clean()
    with transaction.atomic():
        agent.save(update_fields=update_fields)
        audit_event_record(
            actor=actor, action=AuditAction.AGENT_UPDATE, target=_target(agent), detail={"fields": changed}
        )
        if embedded_changed:
            _embed_after_commit(agent)
    return agent


def agent_replace(*, actor, agent: Agent, **fields) -> Agent:
    """Replace the whole card (PUT): card fields the new card omits go back to their defaults, except
    `visibility`, which stays as it is unless given."""
    require_editable(fields, EDITABLE_FIELDS)
    for name in EDITABLE_FIELDS:
        if name not in fields and name not in KEPT_WHEN_OMITTED:
            fields[name] = Agent._meta.get_field(name).get_default()
    return agent_update(actor=actor, agent=agent, **fields)


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
