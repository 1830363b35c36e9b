from django.db import models


class ServerQuerySet(models.QuerySet):
    def enabled(self):
        return self.filter(is_enabled=True)

    def for_listing(self):
        """Rows for display: without the 384-float embedding and the outbound headers, which no
        listing shows and which cost more to load than everything else on the row."""
        return self.defer("embedding", "headers")

    def visible_to(self, principal):
        """The servers `principal` may see; every listing of every surface filters through this."""
        sees_all, paths = principal.server_visibility()
        return self.all() if sees_all else self.filter(path__in=paths)
