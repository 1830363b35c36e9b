"""Who may see a published entry (an agent card, a skill): everyone, its owner, or members of its groups;
administrators see all. One rule for every kind that has an owner and groups, applied by every listing,
search and read before any limit."""

from django.db import models
from django.db.models import Exists, OuterRef, Q


class Visibility(models.TextChoices):
    """Who may see an entry: everyone, its owner (and admins), or members of its groups."""

    PUBLIC = "public", "Public"
    PRIVATE = "private", "Private"
    INTERNAL = "internal", "Internal"


def visible_rows(queryset, principal, group_relation: str):
    """`queryset` cut to what `principal` may see: public to everyone (enabled only, for anonymous callers,
    where the rows have `is_enabled`), private to the owner, internal to members of the owner's groups or
    of the entry's own (`group_relation`: the name Django's Group gives the entries' many-to-many)."""
    if principal.is_admin:
        return queryset.all()
    if not principal.is_authenticated:
        public = queryset.filter(visibility=Visibility.PUBLIC)
        has_switch = any(field.name == "is_enabled" for field in queryset.model._meta.fields)
        return public.filter(is_enabled=True) if has_switch else public
    visible = Q(visibility=Visibility.PUBLIC)
    if principal.user is not None:
        visible |= Q(owner=principal.user)
    if principal.groups:
        from django.contrib.auth.models import Group

        shares_group = Exists(
            Group.objects.filter(name__in=principal.groups).filter(
                Q(user=OuterRef("owner")) | Q(**{group_relation: OuterRef("pk")})
            )
        )
        visible |= Q(visibility=Visibility.INTERNAL) & shares_group
    return queryset.filter(visible)
