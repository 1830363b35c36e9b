from django.db import models

from core.visibility import visible_rows


class AgentQuerySet(models.QuerySet):
    def enabled(self):
        return self.filter(is_enabled=True)

    def for_listing(self):
        """Rows for display: without the 384-float embedding, which no listing shows."""
        return self.defer("embedding")

    def embedding_dirty(self):
        return self.filter(embedding_dirty=True)

    def visible_to(self, principal):
        """The agents `principal` may see, by the one rule of core/visibility.py."""
        return visible_rows(self, principal, "agents")
