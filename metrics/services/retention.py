"""Applying the retention policies: each table deletes rows older than its policy's days (or
METRICS_RETENTION_DAYS). Tables are addressed only through the known list, never by request text."""

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from accounts.choices import AuditAction
from accounts.services import audit_event_record
from metrics.models import METRIC_TABLES, RetentionPolicy
from metrics.selectors import retention_days


def retention_apply(*, actor=None, dry_run: bool = False, tables: list[str] | None = None) -> dict[str, int]:
    """Delete (or with `dry_run` only count) expired rows; returns rows per table. `tables` must come
    from METRIC_TABLES (the API validates it against that list)."""
    names = list(METRIC_TABLES) if tables is None else [name for name in METRIC_TABLES if name in tables]
    days = retention_days()
    now = timezone.now()
    counts = {}
    with transaction.atomic():
        for name in names:
            expired = METRIC_TABLES[name].objects.filter(timestamp__lt=now - timedelta(days=days[name]))
            counts[name] = expired.count() if dry_run else expired.delete()[0]
        if not dry_run and any(counts.values()):
            audit_event_record(
                actor=actor,
                action=AuditAction.RETENTION_CLEANUP,
                target="metrics",
                detail={"deleted": counts},
            )
    return counts


def retention_policy_set(*, actor, table: str, days: int) -> RetentionPolicy:
    """Keep `table`'s rows `days` days (a table of METRIC_TABLES)."""
    if table not in METRIC_TABLES:
        raise ValueError(f"Unknown table {table!r}.")
    with transaction.atomic():
        policy, _ = RetentionPolicy.objects.update_or_create(table=table, defaults={"days": days})
        audit_event_record(
            actor=actor,
            action=AuditAction.RETENTION_POLICY_SET,
            target=f"metrics:{table}",
            detail={"days": days},
        )
    return policy


def retention_policy_delete(*, actor, policy: RetentionPolicy) -> None:
    """Back to METRICS_RETENTION_DAYS for the policy's table."""
    with transaction.atomic():
        policy.delete()
        audit_event_record(
            actor=actor, action=AuditAction.RETENTION_POLICY_SET, target=f"metrics:{policy.table}"
        )
