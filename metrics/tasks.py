"""Celery tasks of the metrics service: the buffer flush (every METRICS_FLUSH_INTERVAL_SECONDS) and the
daily retention cleanup. Both are safe to run twice or at once."""

from celery import shared_task


@shared_task(name="metrics.flush_metrics_task", ignore_result=True)
def flush_metrics_task() -> int:
    """Store buffered metrics in PostgreSQL; returns how many were stored."""
    from metrics.services import metrics_flush

    return metrics_flush()


@shared_task(name="metrics.retention_cleanup_task", ignore_result=True)
def retention_cleanup_task() -> dict:
    """Delete rows older than each table's retention."""
    from metrics.services import retention_apply

    return retention_apply()
