from django.db import models


class ServerQuerySet(models.QuerySet):
    def enabled(self):
        return self.filter(is_enabled=True)
