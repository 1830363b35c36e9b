"""Writes for accounts: the audit trail and the bootstrap admin."""

import secrets
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from accounts.choices import AuditAction
from accounts.models import AuditEvent, Scope, User
from registry_site.services import apply_changes, require_editable

SYSTEM_ACTOR = "system"


def audit_event_record(*, actor: User | None, action: AuditAction, target: str, detail: dict | None = None):
    """Append one audit row. Called by every service that mutates, inside its transaction."""
    name = actor.get_username() if actor is not None and actor.is_authenticated else SYSTEM_ACTOR
    return AuditEvent.objects.create(
        actor=actor if actor is not None and actor.is_authenticated else None,
        actor_name=name,
        action=action,
        target=target,
        detail=detail or {},
    )


@dataclass(frozen=True)
class AdminEnsureResult:
    user: User
    created: bool
    password_file: Path | None  # where a generated password was written, if one was


def admin_ensure(*, username: str, password: str, password_file: Path) -> AdminEnsureResult:
    """Make sure an admin superuser exists.

    With a password from the environment, the user gets exactly that password. Without one, a new
    user gets a generated password written once to `password_file` (0600); an existing user is left
    as it is. There is never a default password.
    """
    with transaction.atomic():
        user = User.objects.select_for_update().filter(username=username).first()
        created = user is None
        if created:
            user = User(username=username, is_staff=True, is_superuser=True)
        user.is_staff = True
        user.is_superuser = True
        user.is_active = True
        written = None
        if password:
            if created or not user.check_password(password):
                user.set_password(password)
        elif created:
            generated = secrets.token_urlsafe(18)
            user.set_password(generated)
            password_file.parent.mkdir(parents=True, exist_ok=True)
            password_file.write_text(f"{username}\n{generated}\n")
            password_file.chmod(0o600)
            written = password_file
        user.full_clean()
        user.save()
        if created:
            audit_event_record(
                actor=None, action=AuditAction.USER_CREATE, target=f"user:{username}", detail={"admin": True}
            )
    return AdminEnsureResult(user=user, created=created, password_file=written)


SCOPE_EDITABLE_FIELDS = ("description", "server_rules", "ui_permissions")


def scope_create(*, actor: User | None, name: str, **fields) -> Scope:
    """Create a scope (a named bundle of server rules and UI permissions)."""
    require_editable(fields, SCOPE_EDITABLE_FIELDS)
    scope = Scope(name=name, **fields)
    scope.full_clean()
    with transaction.atomic():
        scope.save()
        audit_event_record(actor=actor, action=AuditAction.SCOPE_CREATE, target=f"scope:{name}")
    return scope


def scope_update(*, actor: User | None, scope: Scope, **fields) -> Scope:
    require_editable(fields, SCOPE_EDITABLE_FIELDS)
    changed = apply_changes(scope, fields)
    if not changed:
        return scope
    scope.full_clean()
    with transaction.atomic():
        scope.save(update_fields=[*changed, "updated_at"])
        audit_event_record(
            actor=actor,
            action=AuditAction.SCOPE_UPDATE,
            target=f"scope:{scope.name}",
            detail={"fields": changed},
        )
    return scope


def scope_delete(*, actor: User | None, scope: Scope) -> None:
    target = f"scope:{scope.name}"
    with transaction.atomic():
        scope.delete()
        audit_event_record(actor=actor, action=AuditAction.SCOPE_DELETE, target=target)
