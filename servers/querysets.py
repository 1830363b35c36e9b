from django.db import models


class ServerQuerySet(models.QuerySet):
    def enabled(self):
        return self.filter(is_enabled=True)

    def visible_to(self, principal):
        """The servers `principal` may see; every listing of every surface filters through this."""
        sees_all, paths = principal.server_visibility()
        return self.all() if sees_all else self.filter(path__in=paths)
