"""Writes for servers. Every surface (JSON APIs, dashboard, internal API, admin) calls these."""

from django.db import transaction

from accounts.choices import AuditAction
from accounts.models import User
from accounts.services import audit_event_record
from registry_site.services import apply_changes, require_editable
from servers.choices import HealthStatus
from servers.models import Server

# Fields a caller may set on create or update; health fields belong to the health checker.
EDITABLE_FIELDS = (
    "name",
    "description",
    "proxy_pass_url",
    "tags",
    "num_tools",
    "num_stars",
    "is_python",
    "license",
    "supported_transports",
    "auth_type",
    "auth_provider",
    "headers",
    "version",
)


def _target(server: Server) -> str:
    return f"server:{server.path}"


def server_create(*, actor: User | None, path: str, is_enabled: bool = False, **fields) -> Server:
    """Register a server; it starts `unknown` when enabled (not yet checked) and `disabled` otherwise."""
    require_editable(fields, EDITABLE_FIELDS)
    server = Server(
        path=path,
        is_enabled=is_enabled,
        health_status=HealthStatus.UNKNOWN if is_enabled else HealthStatus.DISABLED,
        registered_by=actor if actor is not None and actor.is_authenticated else None,
        **fields,
    )
    server.full_clean()
    with transaction.atomic():
        server.save()
        audit_event_record(
            actor=actor,
            action=AuditAction.SERVER_CREATE,
            target=_target(server),
            detail={"name": server.name},
        )
    return server


def server_update(*, actor: User | None, server: Server, **fields) -> Server:
    """Change a server's editable fields; the audit row lists which fields changed (never their values,
    since `headers` may hold credentials)."""
    require_editable(fields, EDITABLE_FIELDS)
    changed = apply_changes(server, fields)
    if not changed:
        return server
    server.full_clean()
    with transaction.atomic():
        server.save(update_fields=[*changed, "updated_at"])
        audit_event_record(
            actor=actor, action=AuditAction.SERVER_UPDATE, target=_target(server), detail={"fields": changed}
        )
    return server


def server_toggle(*, actor: User | None, server: Server, enabled: bool) -> Server:
    """Enable or disable a server. A disabled server shows `disabled`; an enabled one is `unknown`
    until its next health check."""
    if server.is_enabled == enabled:
        return server
    server.is_enabled = enabled
    server.health_status = HealthStatus.UNKNOWN if enabled else HealthStatus.DISABLED
    with transaction.atomic():
        server.save(update_fields=["is_enabled", "health_status", "updated_at"])
        audit_event_record(
            actor=actor,
            action=AuditAction.SERVER_ENABLE if enabled else AuditAction.SERVER_DISABLE,
            target=_target(server),
        )
    return server


def server_delete(*, actor: User | None, server: Server) -> None:
    """Remove a server and its tools."""
    target = _target(server)
    with transaction.atomic():
        server.delete()
        audit_event_record(actor=actor, action=AuditAction.SERVER_DELETE, target=target)
