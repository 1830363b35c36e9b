"""Scopes: named bundles of server rules and UI permissions, granted to groups."""

from django.contrib.auth.models import Group
from django.db import transaction

from accounts.choices import AuditAction, UiPermission
from accounts.models import IdpGroupMapping, Scope, User
from accounts.services.audit import audit_event_record
from accounts.services.users import relation_set
from core.services import apply_changes, require_editable

SCOPE_EDITABLE_FIELDS = ("description", "server_rules", "ui_permissions", "publish_names")


def scope_create(*, actor: User | None, name: str, **fields) -> Scope:
    """Create a scope (a named bundle of server rules and UI permissions)."""
    require_editable(fields, SCOPE_EDITABLE_FIELDS)
    scope = Scope(name=name, **fields)
    scope.full_clean()
    with transaction.atomic():
        scope.save()
        audit_event_record(
            actor=actor, action=AuditAction.SCOPE_CREATE, target=f"scope:{name}", detail=_values(scope)
        )
    return scope


def scope_groups_set(*, actor, scope: Scope, groups) -> dict:
    """Grant the scope to exactly `groups`; one audit row names the groups added and removed."""
    with transaction.atomic():
        detail = relation_set(scope.groups, groups, "groups", lambda group: group.name)
        if detail:
            audit_event_record(
                actor=actor, action=AuditAction.SCOPE_GROUPS, target=f"scope:{scope.name}", detail=detail
            )
    return detail


def _values(scope: Scope) -> dict:
    """What a scope grants, as its audit rows record it."""
    return {name: getattr(scope, name) for name in SCOPE_EDITABLE_FIELDS}


def scope_update(*, actor: User | None, scope: Scope, **fields) -> Scope:
    require_editable(fields, SCOPE_EDITABLE_FIELDS)
    before = _values(scope)
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
            detail={
                "fields": changed,
                "was": {name: before[name] for name in changed},
                "now": {name: getattr(scope, name) for name in changed},
            },
        )
    return scope


def scope_delete(*, actor: User | None, scope: Scope) -> None:
    target = f"scope:{scope.name}"
    with transaction.atomic():
        scope.delete()
        audit_event_record(actor=actor, action=AuditAction.SCOPE_DELETE, target=target)


# -- the reference implementation's scopes.yml ---------------------------------------------------------

UI_SCOPES_KEY = "UI-Scopes"
GROUP_MAPPINGS_KEY = "group_mappings"


class ScopesFileError(ValueError):
    """The document is not in the scopes.yml layout; the message says where."""


def _check_document(document) -> tuple[dict, dict, dict]:
    if not isinstance(document, dict):
        raise ScopesFileError("the file must be a mapping at the top level")
    ui = document.get(UI_SCOPES_KEY) or {}
    mappings = document.get(GROUP_MAPPINGS_KEY) or {}
    if not isinstance(ui, dict) or not all(isinstance(v, dict) for v in ui.values()):
        raise ScopesFileError(f"{UI_SCOPES_KEY} must map scope names to permission lists")
    for scope, permissions in ui.items():
        for permission, paths in permissions.items():
            if permission not in set(UiPermission) or not isinstance(paths, list):
                raise ScopesFileError(
                    f"{UI_SCOPES_KEY}.{scope}.{permission}: unknown permission or not a list of paths"
                )
    if not isinstance(mappings, dict) or not all(isinstance(v, list) for v in mappings.values()):
        raise ScopesFileError(f"{GROUP_MAPPINGS_KEY} must map group names to lists of scope names")
    rules = {k: v for k, v in document.items() if k not in (UI_SCOPES_KEY, GROUP_MAPPINGS_KEY)}
    for scope, entries in rules.items():
        if not isinstance(entries, list) or not all(isinstance(e, dict) and "server" in e for e in entries):
            raise ScopesFileError(f"{scope}: must be a list of {{server, methods, tools}} rules")
    return ui, mappings, rules


def scopes_import(*, actor, document) -> dict:
    """Load a scopes.yml document: scopes (server rules + UI permissions), groups and their identity
    provider mappings. Scopes named in the file are replaced; each mapped group gets exactly the file's
    scopes. Returns counts for the report."""
    ui, mappings, rules = _check_document(document)
    names = set(ui) | set(rules) | {name for scopes in mappings.values() for name in scopes}
    with transaction.atomic():
        scopes = {}
        for name in sorted(names):
            scope, _ = Scope.objects.get_or_create(name=str(name))
            scope.ui_permissions = ui.get(name, {})
            scope.server_rules = rules.get(name, [])
            scope.full_clean()
            scope.save()
            scopes[name] = scope
        for group_name, scope_names in mappings.items():
            group, _ = Group.objects.get_or_create(name=str(group_name))
            IdpGroupMapping.objects.get_or_create(idp_group=str(group_name), group=group)
            group.scopes.set([scopes[name] for name in scope_names])
        summary = {"scopes": len(scopes), "groups": len(mappings)}
        audit_event_record(actor=actor, action=AuditAction.SCOPES_IMPORT, target="scopes", detail=summary)
    return summary
