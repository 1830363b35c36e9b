"""Group membership that follows an identity provider's groups claim."""

from django.contrib.auth.models import Group
from django.db import transaction

from accounts.choices import AuditAction
from accounts.models import User
from accounts.services.audit import audit_event_record


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
