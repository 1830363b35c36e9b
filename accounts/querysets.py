from django.db import models


class AuditEventQuerySet(models.QuerySet):
    """Audit rows are append-only: bulk updates and deletes are refused."""

    def update(self, **kwargs):
        raise PermissionError("audit events are append-only")

    def delete(self):
        raise PermissionError("audit events are append-only")

    def for_target(self, target: str):
        return self.filter(target=target)
