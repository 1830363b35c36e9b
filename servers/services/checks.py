"""Queueing health checks (and so tool discovery) of servers, for every service that needs one."""

from celery import current_app
from django.db import transaction

from servers.models import Server

# Queued by name: the tasks module calls these services, so it is not imported here.
CHECK_TASK = "servers.check_server_task"
SWEEP_TASK = "servers.sweep_health_task"


def server_refresh(*, server: Server) -> None:
    """Queue an immediate health check and tool discovery of `server` (after the transaction commits).

    Disabled servers are not checked. The check runs on a worker; callers answer with the current status."""
    if server.is_enabled:
        transaction.on_commit(lambda: current_app.send_task(CHECK_TASK, args=(server.pk,)))


def servers_refresh() -> None:
    """Queue a health check of every enabled server: one sweep task that fans the checks out on a worker,
    so the caller answers at once however many servers there are (10,000 checks queued one by one
    took a request 30–75 s)."""
    transaction.on_commit(lambda: current_app.send_task(SWEEP_TASK))
