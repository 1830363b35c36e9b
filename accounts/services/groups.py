"""Groups: membership that follows an identity provider's groups claim, group administration for the
internal API, and which servers a group may reach.

A group reaches a server through a scope. The internal API edits only the scope a group owns, named
`group:<group name>` and linked to that group, so granting one group never changes what another may do.
"""

from __future__ import annotations

from django.contrib.auth.models import Group
from django.db import IntegrityError, transaction

from accounts.choices import GROUP_SCOPE_PREFIX, SYSTEM_GROUPS, AuditAction, UiPermission, group_scope_name
from accounts.idp_admin import IdpError, KeycloakAdmin
from accounts.models import IdpGroupMapping, Scope, User
from accounts.principal import ALL, ANY
from accounts.services.audit import audit_event_record
from core.errors import ErrorCode
from core.validators import normalize_path

GROUP_NAME_MAX_LENGTH = 150 - len(GROUP_SCOPE_PREFIX)  # the group's own scope name must fit Scope.name


class GroupRefused(Exception):
    """A group request that cannot be done; `code` is the error catalogue code, `status` the HTTP answer."""

    def __init__(self, message: str, *, code: ErrorCode, status: int):
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status


def user_sync_idp_groups(*, user: User, idp_groups: list[str], provider: str) -> list[str]:
    """Make the user's identity-provider-managed groups equal what the claim maps to.

    Groups with no identity-provider mapping are local and left as they are. Returns the group names.
    """
    mapped = set(Group.objects.filter(idp_mappings__idp_group__in=idp_groups).distinct())
    managed = set(Group.objects.filter(idp_mappings__isnull=False).distinct())
    current = set(user.groups.all())
    wanted = (current - managed) | mapped
    names = sorted(group.name for group in wanted)
    if wanted != current:
        with transaction.atomic():
            user.groups.set(wanted)
            audit_event_record(
                actor=None,
                action=AuditAction.USER_GROUPS_SYNC,
                target=f"user:{user.get_username()}",
                detail={"provider": provider, "groups": names},
            )
    return names


def _idp_or_refuse(action: str) -> KeycloakAdmin:
    idp = KeycloakAdmin.from_settings()
    if idp is None:
        raise GroupRefused(
            f"Cannot {action} the identity provider: no identity-provider admin API is configured "
            "(KEYCLOAK_URL, KEYCLOAK_ADMIN_CLIENT_ID and KEYCLOAK_ADMIN_CLIENT_SECRET).",
            code=ErrorCode.IDP_NOT_CONFIGURED,
            status=400,
        )
    return idp


def _idp_refused(exc: IdpError) -> GroupRefused:
    return GroupRefused(f"{exc} Nothing was changed.", code=ErrorCode.IDP_UNAVAILABLE, status=502)


# -- creating and deleting groups ------------------------------------------------------------------------


def group_name_problem(name: str) -> str | None:
    """Why `name` cannot name a group (the API's and the console's one rule), or None."""
    if not name.strip() or name != name.strip() or "," in name or len(name) > GROUP_NAME_MAX_LENGTH:
        return (
            f"A group name is 1 to {GROUP_NAME_MAX_LENGTH} characters, without commas or surrounding spaces."
        )
    return None


def group_create(*, actor, name: str, description: str = "", create_in_idp: bool = False) -> str | None:
    """Create a group and the scope it owns (which keeps the description).

    With `create_in_idp`, the identity provider gets a group of the same name and the registry group is
    mapped to it; if the identity provider fails, nothing is created. Returns what happened there:
    None (not asked), "created" or "existing"."""
    if problem := group_name_problem(name):
        raise GroupRefused(problem, code=ErrorCode.VALIDATION_ERROR, status=400)
    idp = _idp_or_refuse("create the group in") if create_in_idp else None
    exists = GroupRefused(f"Group '{name}' already exists.", code=ErrorCode.CONFLICT, status=409)
    if Group.objects.filter(name=name).exists():
        raise exists
    try:
        with transaction.atomic():
            group = Group(name=name)
            group.full_clean(validate_unique=False)
            group.save()
            scope, _ = Scope.objects.get_or_create(name=group_scope_name(name))
            if description:
                scope.description = description
                scope.save(update_fields=["description", "updated_at"])
            scope.groups.add(group)
            idp_result = None
            if idp is not None:
                IdpGroupMapping.objects.get_or_create(idp_group=name, group=group)
                try:
                    idp_result = "created" if idp.group_create(name) else "existing"
                except IdpError as exc:
                    raise _idp_refused(exc) from None
            audit_event_record(
                actor=actor,
                action=AuditAction.GROUP_CREATE,
                target=f"group:{name}",
                detail={"description": description, "idp": idp_result},
            )
    except IntegrityError:
        raise exists from None  # created concurrently
    return idp_result


def group_delete(
    *, actor, name: str, force: bool = False, delete_from_idp: bool = False
) -> tuple[int, str | None]:
    """Delete a group and the scope it owns. System groups are refused; a group with members only with
    `force`. With `delete_from_idp`, the identity provider's group of that name goes too (nothing is
    deleted if that fails). Returns (members removed, None | "deleted" | "absent")."""
    if name in SYSTEM_GROUPS:
        raise GroupRefused(
            f"'{name}' is a system group and cannot be deleted.", code=ErrorCode.PERMISSION_DENIED, status=403
        )
    idp = _idp_or_refuse("delete the group from") if delete_from_idp else None
    with transaction.atomic():
        group = Group.objects.select_for_update().filter(name=name).first()
        if group is None:
            raise GroupRefused(f"Unknown group: {name}.", code=ErrorCode.NOT_FOUND, status=404)
        members = group.user_set.count()
        if members and not force:
            raise GroupRefused(
                f"Group '{name}' has {members} member(s); pass force=true to delete it anyway.",
                code=ErrorCode.CONFLICT,
                status=409,
            )
        # The group's own scope goes with it, unless someone linked it to another group as well.
        others = Group.objects.exclude(pk=group.pk)
        Scope.objects.filter(name=group_scope_name(name)).exclude(groups__in=others).delete()
        group.delete()
        idp_result = None
        if idp is not None:
            try:
                idp_result = "deleted" if idp.group_delete(name) else "absent"
            except IdpError as exc:
                raise _idp_refused(exc) from None
        audit_event_record(
            actor=actor,
            action=AuditAction.GROUP_DELETE,
            target=f"group:{name}",
            detail={"members": members, "forced": bool(force and members), "idp": idp_result},
        )
    return members, idp_result


# -- which servers a group reaches ---------------------------------------------------------------------


def groups_named(names: list[str]) -> list[Group]:
    """The groups, in the order named; 404 naming every unknown one (before anything changes)."""
    found = {group.name: group for group in Group.objects.filter(name__in=names)}
    unknown = [name for name in names if name not in found]
    if unknown:
        label = "group" if len(unknown) == 1 else "groups"
        raise GroupRefused(f"Unknown {label}: {', '.join(unknown)}.", code=ErrorCode.NOT_FOUND, status=404)
    return [found[name] for name in names]


def _own_scope(group: Group) -> tuple[Scope, bool]:
    """The group's own scope, locked, created and linked when needed; (scope, whether that changed it)."""
    scope, created = Scope.objects.select_for_update().get_or_create(name=group_scope_name(group.name))
    linked = scope.groups.filter(pk=group.pk).exists()
    if not linked:
        scope.groups.add(group)
    return scope, created or not linked


def _rule_server(rule) -> str | None:
    if not isinstance(rule, dict) or rule.get("server") in (None, ""):
        return None
    return normalize_path(rule["server"])


def _listed(scope: Scope) -> list[str]:
    paths = (scope.ui_permissions or {}).get(UiPermission.LIST_SERVICE, [])
    return [paths] if isinstance(paths, str) else list(paths)


def groups_server_grant(*, actor, group_names: list[str], server_path: str) -> list[str]:
    """Let each group call every method and tool of the server and list it, through the group's own
    scope. Idempotent; returns the names of the groups whose scope changed."""
    full_rule = {"server": server_path, "methods": ANY, "tools": ANY}
    changed = []
    with transaction.atomic():
        for group in groups_named(group_names):
            scope, touched = _own_scope(group)
            others = [rule for rule in scope.server_rules if _rule_server(rule) != server_path]
            rules = [*others, full_rule]
            listed = _listed(scope)
            if normalize_path(server_path) not in {normalize_path(p) for p in listed}:
                listed.append(server_path)
            ui = {**(scope.ui_permissions or {}), UiPermission.LIST_SERVICE.value: listed}
            if rules == scope.server_rules and ui == scope.ui_permissions and not touched:
                continue
            scope.server_rules, scope.ui_permissions = rules, ui
            scope.full_clean()
            scope.save(update_fields=["server_rules", "ui_permissions", "updated_at"])
            audit_event_record(
                actor=actor,
                action=AuditAction.GROUP_SERVER_GRANT,
                target=f"group:{group.name}",
                detail={"server": server_path, "scope": scope.name},
            )
            changed.append(group.name)
    return changed


def _without_path(scope: Scope, server_path: str, *, permissions=None) -> tuple[list, dict]:
    """The scope's rules and UI permissions with `server_path` taken out (of `permissions`, or all)."""
    rules = [rule for rule in scope.server_rules if _rule_server(rule) != server_path]
    ui = {}
    for permission, paths in (scope.ui_permissions or {}).items():
        if permissions is None or permission in permissions:
            paths = [paths] if isinstance(paths, str) else paths
            paths = [p for p in paths if normalize_path(p) != server_path]
        ui[permission] = paths
    return rules, ui


def _reaches(scope: Scope, server_path: str) -> bool:
    """Does this scope make the server visible or callable (a rule or listing for it, or for all)?"""
    if any(_rule_server(rule) in (server_path, ANY, ALL) for rule in scope.server_rules):
        return True
    return any(normalize_path(p) in (server_path, ANY, ALL) for p in _listed(scope))


def groups_server_revoke(*, actor, group_names: list[str], server_path: str) -> tuple[list[str], dict]:
    """Take the server out of each group's own scope. Idempotent. Returns the names of the groups whose
    scope changed, and for each group still reaching the server, the other scopes that grant it."""
    changed: list[str] = []
    still: dict[str, list[str]] = {}
    with transaction.atomic():
        for group in groups_named(group_names):
            scope = Scope.objects.select_for_update().filter(name=group_scope_name(group.name)).first()
            if scope is not None:
                rules, ui = _without_path(scope, server_path, permissions={UiPermission.LIST_SERVICE.value})
                if (rules, ui) != (scope.server_rules, scope.ui_permissions):
                    scope.server_rules, scope.ui_permissions = rules, ui
                    scope.save(update_fields=["server_rules", "ui_permissions", "updated_at"])
                    audit_event_record(
                        actor=actor,
                        action=AuditAction.GROUP_SERVER_REVOKE,
                        target=f"group:{group.name}",
                        detail={"server": server_path, "scope": scope.name},
                    )
                    changed.append(group.name)
            granting = sorted(s.name for s in group.scopes.all() if _reaches(s, server_path))
            if granting:
                still[group.name] = granting
    return changed, still


def server_grants_forget(*, actor, server_path: str) -> list[str]:
    """Take a removed server's path out of every scope (rules and UI permissions), so a server
    registered later at the same path is not reachable through grants made for the old one.
    Wildcard rules stay. Returns the names of the scopes changed."""
    changed = []
    with transaction.atomic():
        for scope in Scope.objects.select_for_update().order_by("name"):
            rules, ui = _without_path(scope, server_path)
            if (rules, ui) == (scope.server_rules, scope.ui_permissions):
                continue
            scope.server_rules, scope.ui_permissions = rules, ui
            scope.save(update_fields=["server_rules", "ui_permissions", "updated_at"])
            audit_event_record(
                actor=actor,
                action=AuditAction.SCOPE_UPDATE,
                target=f"scope:{scope.name}",
                detail={"removed_server": server_path},
            )
            changed.append(scope.name)
    return changed
