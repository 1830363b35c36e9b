"""Writes of health-check outcomes. The health checker is not an operator, so these write no audit
events; they only record what the server answered."""

import logging

from django.db import transaction
from django.utils import timezone

from servers.check_results import CheckResult
from servers.choices import NOT_HEALTHY, HealthStatus
from servers.live.publish import health_changed
from servers.models import HealthTransition, Server
from servers.services.pins import prompts_pin
from servers.services.tools import tools_store

logger = logging.getLogger(__name__)

CHECK_STATUSES = (
    HealthStatus.HEALTHY,
    HealthStatus.AUTH_REFUSED,
    HealthStatus.NEEDS_CONNECTION,
    HealthStatus.UNHEALTHY,
)


def server_health_record(*, server: Server, result: CheckResult) -> bool:
    """Store a check's status, detail and time and, when the check listed tools, the tools.

    A failed check keeps the last known tools: a server that is down for a minute has not stopped
    offering them. Returns False, writing nothing, when the server was disabled or deleted while the
    check ran (its `disabled` status must not be overwritten). `updated_at` moves only when the tools
    change, so `updated_since` listings are not flooded by every sweep."""
    if result.status not in CHECK_STATUSES:
        raise ValueError(f"A health check cannot record the status {result.status!r}.")
    with transaction.atomic():
        row = Server.objects.select_for_update().filter(pk=server.pk, is_enabled=True).first()
        if row is None:
            return False
        transition_record(server=row, to_status=result.status, detail=result.detail, at=result.checked_at)
        fields = ["health_detail", "last_checked_at"]  # and the status fields only when they change
        before = (row.health_status, row.unhealthy_since)
        row.health_status = result.status
        row.health_detail = result.detail
        row.last_checked_at = result.checked_at
        if result.status not in NOT_HEALTHY:
            row.unhealthy_since = None
        elif row.unhealthy_since is None:
            row.unhealthy_since = result.checked_at
        if before != (row.health_status, row.unhealthy_since):
            fields += ["health_status", "unhealthy_since"]
        tools_changed = False
        if result.status not in NOT_HEALTHY and result.tools is not None:
            tools_changed = tools_store(row, result.tools, discovered=True)
            if tools_changed:
                fields += ["num_tools", "updated_at"]
            if result.prompts is not None:
                prompts_pin(row, result.prompts)
            if row.repin_on_discovery:  # both lists pinned as offered: enabling approved them
                row.repin_on_discovery = False
                fields.append("repin_on_discovery")
        row.save(update_fields=fields)
        health_changed(row)  # every check: pages show when the server was last checked
    _copy_health(row, server)
    return True


def transition_record(
    *, server: Server, to_status: str, detail: str = "", at=None
) -> HealthTransition | None:
    """A history row when `server`'s stored status is about to change to `to_status`; call it before
    saving the new status, inside the writer's transaction."""
    if server.health_status == to_status:
        return None
    return HealthTransition.objects.create(
        server=server,
        from_status=server.health_status,
        to_status=to_status,
        detail=detail[:1000],
        at=at or timezone.now(),
    )


def _copy_health(source: Server, target: Server) -> None:
    """Let the caller's instance show what was stored."""
    names = (
        "health_status",
        "health_detail",
        "last_checked_at",
        "unhealthy_since",
        "num_tools",
        "updated_at",
    )
    for name in names:
        setattr(target, name, getattr(source, name))
