"""Celery tasks of the servers app. Tasks take ids, never model instances, and are safe to run twice."""

import secrets

from celery import shared_task
from celery.signals import worker_init


@shared_task(name="servers.check_server_task", ignore_result=True)
def check_server_task(server_id: int) -> None:
    """Check one server's health and discover its tools over a real MCP session."""
    from servers.health import check_and_record

    check_and_record(server_id)


SWEEP_LOCK = "registry:health-sweep"


@shared_task(name="servers.sweep_health_task", ignore_result=True)
def sweep_health_task() -> int:
    """Fan out one check per enabled server, so checks run in parallel on every worker and one slow
    server delays no other; each check expires before the next sweep. Returns how many were queued.

    One sweep fans out at a time: queueing 10,000 checks takes long enough for the broker to deliver the
    same sweep again to another worker (past the visibility timeout), and a sweep queued while one is
    queueing would only repeat its checks; either finds the lock taken and queues nothing. A sweep lost
    with its worker loses nothing: the next sweep queues every server again."""
    from django.conf import settings
    from django.db.models import F

    from core.redis_clients import sync_client
    from servers.models import Server

    expires = max(1, settings.HEALTH_CHECK_INTERVAL_SECONDS - 1)
    redis, token = sync_client(), secrets.token_hex(8)
    if not redis.set(SWEEP_LOCK, token, nx=True, ex=expires):
        return 0
    try:
        # Least recently checked first: when hung servers hold the workers so long that the last checks
        # of a sweep expire unrun, those servers lead the next sweep instead of being skipped every time.
        order = (F("last_checked_at").asc(nulls_first=True), "pk")
        ids = list(Server.objects.enabled().order_by(*order).values_list("pk", flat=True))
        for server_id in ids:
            check_server_task.apply_async((server_id,), expires=expires)
        return len(ids)
    finally:
        if redis.get(SWEEP_LOCK) == token.encode():
            redis.delete(SWEEP_LOCK)


@shared_task(name="servers.recheck_unhealthy_task", ignore_result=True)
def recheck_unhealthy_task() -> int:
    """Queue a check of every unhealthy server whose re-check is due (servers/recheck.py), so recovery
    shows long before the next sweep. Each check expires when the next look would queue it again.
    Returns how many were queued."""
    from django.conf import settings
    from django.utils import timezone

    from servers.models import Server
    from servers.recheck import due_for_recheck

    expires = max(1, settings.HEALTH_RECHECK_MIN_SECONDS - 1)
    ids = list(due_for_recheck(Server.objects.all(), timezone.now()).values_list("pk", flat=True))
    for server_id in ids:
        check_server_task.apply_async((server_id,), expires=expires)
    return len(ids)


@worker_init.connect
def _import_the_checker(**kwargs) -> None:
    """Import the MCP client stack once in the worker's main process, before it forks its pool, so the
    first check after a start does not spend seconds importing (web processes never need it)."""
    import servers.health  # noqa: F401
