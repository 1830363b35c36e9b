"""Writes for servers. Every surface (JSON APIs, dashboard, internal API, admin) calls these, so they
validate, audit and behave the same everywhere."""

from django.db import transaction

from accounts.choices import AuditAction
from accounts.services import actor_user, audit_event_record, server_grants_forget
from core.public_url import origin_of
from core.services import apply_changes, require_editable
from core.targets import TARGETS
from servers.choices import HealthStatus, UpstreamAuth
from servers.live.publish import health_changed, health_removed
from servers.models import Server
from servers.services.embeddings import EMBEDDED_FIELDS, server_embedding_refresh
from servers.services.health import transition_record
from servers.services.tools import tools_store
from servers.shared_headers import moved_origin
from servers.upstream_auth import mode_settled

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
    "upstream_auth",
    "user_secret_header",
    "version",
    "approve_tool_changes",
)
WRITE_ONLY_FIELDS = {"headers"}  # outbound credentials: set, never shown


class ServerConflict(Exception):
    """The path is already registered (and overwriting was not asked for), or something else holds it
    (`replaceable` False: overwriting cannot help)."""

    def __init__(self, message: str, replaceable: bool = True):
        super().__init__(message)
        self.replaceable = replaceable


def _target(server: Server) -> str:
    return f"server:{server.path}"


def server_create(
    *, actor, path: str, is_enabled: bool = False, tools: list[dict] | None = None, **fields
) -> Server:
    """Register a server; it starts `unknown` when enabled (not yet checked) and `disabled` otherwise."""
    require_editable(fields, EDITABLE_FIELDS)
    fields = mode_settled(fields, mode=UpstreamAuth.NONE, headers=False)
    if Server.objects.filter(path=path).exists():
        raise ServerConflict(f"A server is already registered at {path}.")
    if held := TARGETS.holder_of(path):
        raise ServerConflict(f"{path} is the path of {held}.", replaceable=False)
    server = Server(
        path=path,
        is_enabled=is_enabled,
        health_status=HealthStatus.UNKNOWN if is_enabled else HealthStatus.DISABLED,
        registered_by=actor_user(actor),
        **fields,
    )
    server.full_clean()
    with transaction.atomic():
        server.save()
        if tools is not None and tools_store(server, tools):
            server.save(update_fields=["num_tools", "updated_at"])
        audit_event_record(
            actor=actor,
            action=AuditAction.SERVER_CREATE,
            target=_target(server),
            detail={"name": server.name},
        )
        server_embedding_refresh(server)  # a new row starts dirty
        health_changed(server)
    return server


def server_update(*, actor, server: Server, tools: list[dict] | None = None, **fields) -> Server:
    """Change a server's editable fields; the audit row lists which fields changed (never their values,
    since `headers` may hold credentials).

    Outbound headers are credentials for one origin: when `proxy_pass_url` moves to another origin, the
    old headers are dropped (audited) unless the same call sets headers itself, so whoever may edit a
    server can never send its admin-set credentials to an address of theirs."""
    require_editable(fields, EDITABLE_FIELDS)
    fields = mode_settled(fields, mode=server.upstream_auth, headers=server.has_headers)
    old_origin = origin_of(server.proxy_pass_url)
    changed, detail = moved_origin(server, fields, apply_changes(server, fields), old_origin)
    if not changed and tools is None:
        return server
    update_fields = [*changed, "updated_at"]
    if EMBEDDED_FIELDS.intersection(changed):
        server.embedding_dirty = True
        update_fields.append("embedding_dirty")
    server.full_clean()
    with transaction.atomic():
        if changed:
            server.save(update_fields=update_fields)
        if "embedding_dirty" in update_fields:
            server_embedding_refresh(server)
        if tools is not None and tools_store(server, tools):
            server.save(update_fields=["num_tools", "updated_at"])
            changed = sorted({*changed, "tools"})
        if "num_tools" in changed or "tools" in changed:
            health_changed(server)
        audit_event_record(
            actor=actor,
            action=AuditAction.SERVER_UPDATE,
            target=_target(server),
            detail={"fields": changed, **detail},
        )
    return server


def server_register(
    *,
    actor,
    path: str,
    overwrite: bool = False,
    is_enabled: bool = False,
    tools: list[dict] | None = None,
    **fields,
) -> tuple[Server, bool]:
    """Create a server, or with `overwrite` replace the one at `path`; returns (server, created)."""
    with transaction.atomic():
        existing = Server.objects.select_for_update().filter(path=path).first() if overwrite else None
        if existing is None:
            return server_create(actor=actor, path=path, is_enabled=is_enabled, tools=tools, **fields), True
        server_update(actor=actor, server=existing, tools=tools, **fields)
        server_toggle(actor=actor, server=existing, enabled=is_enabled)
        return existing, False


def server_toggle(*, actor, server: Server, enabled: bool) -> Server:
    """Enable or disable a server. A disabled server shows `disabled`; an enabled one is `unknown`
    until its next health check."""
    if server.is_enabled == enabled:
        return server
    status = HealthStatus.UNKNOWN if enabled else HealthStatus.DISABLED
    with transaction.atomic():
        transition_record(server=server, to_status=status, detail="enabled" if enabled else "disabled")
        server.is_enabled = enabled
        server.health_status = status
        server.unhealthy_since = None
        # Enabling approves what the server offers then, as registering does (servers/services/pins.py).
        server.repin_on_discovery = enabled and server.tools_pinned_at is not None
        server.save(
            update_fields=[
                "is_enabled",
                "health_status",
                "unhealthy_since",
                "repin_on_discovery",
                "updated_at",
            ]
        )
        health_changed(server)
        audit_event_record(
            actor=actor,
            action=AuditAction.SERVER_ENABLE if enabled else AuditAction.SERVER_DISABLE,
            target=_target(server),
        )
    return server


def server_delete(*, actor, server: Server) -> list[str]:
    """Remove a server and its tools, and take its path out of every scope, so a server registered
    later at the same path does not inherit grants made for this one. Returns the scopes changed."""
    target, path = _target(server), server.path
    with transaction.atomic():
        server.delete()
        health_removed(path)
        audit_event_record(actor=actor, action=AuditAction.SERVER_DELETE, target=target)
        return server_grants_forget(actor=actor, server_path=path)
