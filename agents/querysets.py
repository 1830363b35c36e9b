from django.db import models


class AgentQuerySet(models.QuerySet):
    def enabled(self):
        return self.filter(is_enabled=True)

    def embedding_dirty(self):
        return self.filter(embedding_dirty=True)
