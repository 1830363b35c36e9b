"""Celery tasks of the catalog: syncing the upstreams whose time has come (on the beat, every minute);
their versions are embedded by search/tasks.py."""

import logging

from celery import shared_task
from django.utils import timezone

from catalog.selectors import upstreams_due
from catalog.services.mirroring import SyncRunning, UpstreamError, upstream_sync

logger = logging.getLogger(__name__)


@shared_task(name="catalog.sync_due_upstreams_task", ignore_result=True)
def sync_due_upstreams_task() -> dict:
    """Sync each enabled upstream that is due; a failure is recorded on its upstream (with a backoff)
    and does not stop the others, whatever it is. Each sync is bounded (MIRROR_SYNC_MAX_SECONDS)."""
    outcome = {}
    for upstream in upstreams_due(timezone.now()):
        try:
            report = upstream_sync(upstream)
            outcome[upstream.name] = f"{report.seen} seen, {report.added} added, {report.updated} updated"
        except SyncRunning:
            outcome[upstream.name] = "already syncing"
        except UpstreamError as error:
            outcome[upstream.name] = f"failed: {error}"
        except Exception as error:  # not even recorded (the database went away): the next upstream goes on
            logger.exception("Sync of upstream %s failed", upstream.name)
            outcome[upstream.name] = f"failed: {type(error).__name__}"
    return outcome


@shared_task(name="catalog.sync_upstream_task", ignore_result=True)
def sync_upstream_task(upstream_id: int) -> None:
    """Sync one upstream now (the admin's "Sync now")."""
    from catalog.models import Upstream

    upstream = Upstream.objects.filter(pk=upstream_id).first()
    if upstream is None:
        return
    try:
        upstream_sync(upstream)
    except (SyncRunning, UpstreamError) as error:
        logger.info("Sync of %s: %s", upstream.name, error)
