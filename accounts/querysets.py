from django.db import models


class AuditEventQuerySet(models.QuerySet):
    """Audit rows are append-only: bulk updates and deletes are refused."""

    def update(self, **kwargs):
        raise PermissionError("audit events are append-only")

    def delete(self):
        raise PermissionError("audit events are append-only")

    def chain_link(self, pk: int, *, seq: int, prev_hash: str, digest: str) -> int:
        """The audit chain's one write of a row (accounts/services/audit_chain.py): its place and hashes,
        set once, while it has none."""
        unlinked = self.filter(pk=pk, chain_seq__isnull=True)
        return models.QuerySet.update(unlinked, chain_seq=seq, prev_hash=prev_hash, row_hash=digest)

    def retention_remove(self) -> int:
        """Retention's one deletion (accounts/services/audit_chain.py), after its signed checkpoint."""
        return models.QuerySet.delete(self)[0]

    def for_target(self, target: str):
        return self.filter(target=target)
