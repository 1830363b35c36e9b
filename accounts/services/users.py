"""Users and what they belong to, as the operator console writes them: each save, deletion and change
of groups or permissions is audited with what changed (never a password)."""

from django.contrib.auth.models import Group, Permission
from django.db import transaction

from accounts.choices import AuditAction
from accounts.models import IdpGroupMapping, User
from accounts.services.audit import audit_event_record

SECRET_FIELDS = frozenset({"password", "password1", "password2", "usable_password"})


def user_save(*, actor, user: User, created: bool, fields) -> User:
    """Save a user the console's form filled in (`fields`: the names it changed); a new password is
    recorded as `password_changed`, its value never."""
    changed = sorted(set(fields) - SECRET_FIELDS - {"groups", "user_permissions"})
    detail = {"fields": changed} if changed else {}
    if SECRET_FIELDS & set(fields):
        detail["password_changed"] = True
    with transaction.atomic():
        user.save()
        action = AuditAction.USER_CREATE if created else AuditAction.USER_UPDATE
        if created or detail:
            audit_event_record(actor=actor, action=action, target=f"user:{user.username}", detail=detail)
    return user


def user_delete(*, actor, user: User) -> dict:
    """Delete a user and everything that acts or holds secrets for them: the tokens they made (and those
    made from them), applications' tokens and the consents behind them, their client credentials and
    their connections to upstream servers and agents. Every process stops honouring the tokens at once
    (the deletions move the principals' cache epoch: accounts/cache.py). One audit row says how many of
    each went. Returns that detail."""
    target = f"user:{user.username}"
    counted = {
        "tokens": user.issued_tokens.filter(revoked_at__isnull=True).count(),
        "application_tokens": user.oauth2_provider_accesstoken.count(),
        "consents": user.oauth_consents.count(),
        "client_credentials": user.credentials.count(),
        "connections": user.upstream_credentials.count(),
    }
    detail = {name: count for name, count in counted.items() if count}
    with transaction.atomic():
        user.delete()
        audit_event_record(actor=actor, action=AuditAction.USER_DELETE, target=target, detail=detail)
    return detail


def user_memberships_set(*, actor, user: User, groups=None, permissions=None) -> dict:
    """Set a user's groups and direct permissions (either may be None: left as it is); one audit row
    names what was added and removed. Returns that detail."""
    detail = {}
    with transaction.atomic():
        if groups is not None:
            detail.update(relation_set(user.groups, groups, "groups", lambda group: group.name))
        if permissions is not None:
            detail.update(relation_set(user.user_permissions, permissions, "permissions", _permission_name))
        if detail:
            audit_event_record(
                actor=actor,
                action=AuditAction.USER_MEMBERSHIPS,
                target=f"user:{user.username}",
                detail=detail,
            )
    return detail


def group_permissions_set(*, actor, group: Group, permissions) -> dict:
    """Set the Django permissions of a group (what its members may do in the console); audited."""
    with transaction.atomic():
        detail = relation_set(group.permissions, permissions, "permissions", _permission_name)
        if detail:
            audit_event_record(
                actor=actor, action=AuditAction.GROUP_UPDATE, target=f"group:{group.name}", detail=detail
            )
    return detail


def idp_mapping_save(*, actor, mapping: IdpGroupMapping, created: bool) -> IdpGroupMapping:
    """Map an identity-provider group to a registry group (or change a mapping); audited."""
    mapping.full_clean()
    with transaction.atomic():
        before = None if created else IdpGroupMapping.objects.select_related("group").get(pk=mapping.pk)
        mapping.save()
        action = AuditAction.IDP_MAPPING_CREATE if created else AuditAction.IDP_MAPPING_UPDATE
        detail = {} if before is None else {"was": _mapping_target(before)}
        audit_event_record(actor=actor, action=action, target=_mapping_target(mapping), detail=detail)
    return mapping


def idp_mapping_delete(*, actor, mapping: IdpGroupMapping) -> None:
    target = _mapping_target(mapping)
    with transaction.atomic():
        mapping.delete()
        audit_event_record(actor=actor, action=AuditAction.IDP_MAPPING_DELETE, target=target)


def _mapping_target(mapping: IdpGroupMapping) -> str:
    return f"idp_group:{mapping.idp_group}->group:{mapping.group.name}"


def _permission_name(permission: Permission) -> str:
    return f"{permission.content_type.app_label}.{permission.codename}"


def relation_set(related, wanted, label: str, name_of) -> dict:
    """Set a many-to-many relation to `wanted`; {`<label>_added`: [...], `<label>_removed`: [...]} of
    what changed (empty when nothing did)."""
    before, after = set(related.all()), set(wanted)
    if before == after:
        return {}
    related.set(after)
    return {
        f"{label}_added": sorted(name_of(item) for item in after - before),
        f"{label}_removed": sorted(name_of(item) for item in before - after),
    }
