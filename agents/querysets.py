from django.db import models
from django.db.models import Exists, OuterRef, Q

from agents.choices import Visibility


class AgentQuerySet(models.QuerySet):
    def enabled(self):
        return self.filter(is_enabled=True)

    def for_listing(self):
        """Rows for display: without the 384-float embedding, which no listing shows."""
        return self.defer("embedding")

    def embedding_dirty(self):
        return self.filter(embedding_dirty=True)

    def visible_to(self, principal):
        """The agents `principal` may see: public to everyone (enabled only, for anonymous callers),
        private to the owner, internal to members of the owner's or the agent's groups; all to admins.
        Applied before any limit, by every listing and search."""
        if principal.is_admin:
            return self.all()
        if not principal.is_authenticated:
            return self.filter(visibility=Visibility.PUBLIC, is_enabled=True)
        visible = Q(visibility=Visibility.PUBLIC)
        if principal.user is not None:
            visible |= Q(owner=principal.user)
        if principal.groups:
            from django.contrib.auth.models import Group

            shares_group = Exists(
                Group.objects.filter(name__in=principal.groups).filter(
                    Q(user=OuterRef("owner")) | Q(agents=OuterRef("pk"))
                )
            )
            visible |= Q(visibility=Visibility.INTERNAL) & shares_group
        return self.filter(visible)
