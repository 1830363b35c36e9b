"""Writes for agents. Every surface (agent API, agents page, admin) calls these; who may ask for each is
decided in agents/policies.py."""

from celery import current_app
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.choices import AuditAction
from accounts.models import User
from accounts.services import GroupRefused, actor_user, audit_event_record, groups_named
from agents.choices import Visibility
from agents.live import agent_health_changed, agent_health_removed
from agents.models import CARD_PROTOCOL_FIELDS, Agent, AgentHealthTransition
from core.embeddings import EMBED_AGENTS_TASK, embed_after_commit
from core.errors import ErrorCode
from core.public_url import origin_of
from core.services import apply_changes, require_editable
from servers.check_results import CheckResult
from servers.choices import NOT_HEALTHY, HealthStatus, UpstreamAuth
from servers.services.health import CHECK_STATUSES
from servers.shared_headers import moved_origin
from servers.upstream_auth import mode_settled

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
    "headers",
    "upstream_auth",
    "user_secret_header",
    "signed_card",
)
CHECK_TASK = "agents.check_agent_task"
# Changing any of these changes what semantic search should find.
EMBEDDED_FIELDS = {"name", "description", "skills", "tags"}
# Fields a full replacement (PUT) keeps when the new card omits them: omitting a field must never
# widen who sees an agent.
# The agent's credential is the registry's, not the card's: a new card keeps it too.
CREDENTIAL_FIELDS = {"headers", "upstream_auth", "user_secret_header"}
KEPT_WHEN_OMITTED = {"visibility", *CREDENTIAL_FIELDS}


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
    fields = mode_settled(fields, mode=UpstreamAuth.NONE, headers=False)
    if owner is None:
        owner = actor_user(actor)
    agent = Agent(
        path=path,
        is_enabled=False,
        health_status=HealthStatus.DISABLED,
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
    """Change an agent card; text changes mark the embedding dirty and queue the embedding task. A change
    of the card that brings no new signed card drops the old one: its signatures no longer cover it."""
    require_editable(fields, EDITABLE_FIELDS)
    fields = mode_settled(fields, mode=agent.upstream_auth, headers=agent.has_headers)
    if agent.signed_card is not None and "signed_card" not in fields and set(fields) - KEPT_WHEN_OMITTED:
        fields["signed_card"] = None
    old_origin = origin_of(agent.url)
    changed, moved = moved_origin(agent, fields, apply_changes(agent, fields), old_origin)
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
            actor=actor,
            action=AuditAction.AGENT_UPDATE,
            target=_target(agent),
            detail={"fields": changed, **moved},
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
    """Enable or disable an agent. A disabled agent shows `disabled`; an enabled one is `unknown` until
    its first check, which is queued at once."""
    if agent.is_enabled == enabled:
        return agent
    status = HealthStatus.UNKNOWN if enabled else HealthStatus.DISABLED
    with transaction.atomic():
        _transition_record(agent, status, "enabled" if enabled else "disabled", timezone.now())
        agent.is_enabled, agent.health_status, agent.unhealthy_since = enabled, status, None
        agent.save(update_fields=["is_enabled", "health_status", "unhealthy_since", "updated_at"])
        agent_health_changed(agent)
        audit_event_record(
            actor=actor,
            action=AuditAction.AGENT_ENABLE if enabled else AuditAction.AGENT_DISABLE,
            target=_target(agent),
        )
        if enabled:
            agent_refresh(agent=agent)
    return agent


def agent_delete(*, actor: User | None, agent: Agent) -> None:
    target, path = _target(agent), agent.path
    with transaction.atomic():
        agent.delete()
        agent_health_removed(path)
        audit_event_record(actor=actor, action=AuditAction.AGENT_DELETE, target=target)


def agent_groups_grant(*, actor, agent: Agent, group_names: list[str]) -> list[str]:
    """Let each group's members see and use an internal agent (the agent's `groups`). A private agent is
    refused: its owner alone sees it, whatever its groups. Idempotent; returns the groups added."""
    groups = groups_named(group_names)
    if agent.visibility == Visibility.PRIVATE:
        raise GroupRefused(
            f"The agent at {agent.path} is private: its owner alone sees it. Make it internal to share it "
            "with groups.",
            code=ErrorCode.CONFLICT,
            status=409,
        )
    with transaction.atomic():
        present = set(agent.groups.values_list("pk", flat=True))
        added = [group for group in groups if group.pk not in present]
        agent.groups.add(*added)
        _groups_audited(actor, agent, added, AuditAction.GROUP_AGENT_GRANT)
    return [group.name for group in added]


def agent_groups_revoke(*, actor, agent: Agent, group_names: list[str]) -> list[str]:
    """Take an agent from each group (the agent's `groups`). Idempotent; returns the groups removed."""
    groups = groups_named(group_names)
    with transaction.atomic():
        present = set(agent.groups.values_list("pk", flat=True))
        removed = [group for group in groups if group.pk in present]
        agent.groups.remove(*removed)
        _groups_audited(actor, agent, removed, AuditAction.GROUP_AGENT_REVOKE)
    return [group.name for group in removed]


def _groups_audited(actor, agent: Agent, groups, action: str) -> None:
    for group in groups:
        audit_event_record(
            actor=actor, action=action, target=f"group:{group.name}", detail={"agent": agent.path}
        )


# -- health (the checker is no operator: these write no audit events) -------------------------------


def agent_refresh(*, agent: Agent) -> None:
    """Queue a health check of an enabled agent once the surrounding transaction commits."""
    if agent.is_enabled:
        transaction.on_commit(lambda: current_app.send_task(CHECK_TASK, args=(agent.pk,)))


def agent_health_record(*, agent: Agent, result: CheckResult) -> bool:
    """Store a check's status, detail and time, with a history row when the status changes, as for
    servers (servers/services/health.py). False, writing nothing, when the agent was disabled or deleted
    while the check ran."""
    if result.status not in CHECK_STATUSES:
        raise ValueError(f"A health check cannot record the status {result.status!r}.")
    with transaction.atomic():
        row = (
            Agent.objects.select_for_update().filter(pk=agent.pk, is_enabled=True).defer("embedding").first()
        )
        if row is None:
            return False
        _transition_record(row, result.status, result.detail, result.checked_at)
        row.health_status, row.health_detail, row.last_checked_at = (
            result.status,
            result.detail,
            result.checked_at,
        )
        if result.status not in NOT_HEALTHY:
            row.unhealthy_since = None
        elif row.unhealthy_since is None:
            row.unhealthy_since = result.checked_at
        row.save(update_fields=["health_status", "health_detail", "last_checked_at", "unhealthy_since"])
        agent_health_changed(row)
    for name in ("health_status", "health_detail", "last_checked_at", "unhealthy_since"):
        setattr(agent, name, getattr(row, name))
    return True


def _transition_record(agent: Agent, to_status: str, detail: str, at) -> None:
    """A history row when `agent`'s stored status is about to change; inside the writer's transaction."""
    if agent.health_status != to_status:
        AgentHealthTransition.objects.create(
            agent=agent, from_status=agent.health_status, to_status=to_status, detail=detail[:1000], at=at
        )
