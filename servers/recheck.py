"""When an enabled server is checked next: the sweep's interval, or sooner while it is unhealthy.

The policy, in one place for the beat task that queues re-checks and for the pages that show "next
check": a server that turned unhealthy at `unhealthy_since` is checked again after as long as it has
been down, at least HEALTH_RECHECK_MIN_SECONDS and at most HEALTH_CHECK_INTERVAL_SECONDS. With the
defaults (15 s, 300 s) the checks after a failure come 15 s, 30 s, 60 s, 120 s and 240 s after it
started, then every 5 minutes with the sweep: a short outage shows its recovery within seconds, a
long one costs no more than the sweep.
"""

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import DateTimeField, DurationField, ExpressionWrapper, F, Value
from django.db.models.functions import Coalesce, Greatest, Least

from servers.choices import NOT_HEALTHY


def recheck_delay(*, unhealthy_since: datetime | None, checked_at: datetime) -> timedelta:
    """How long after a failed check at `checked_at` the server is checked again."""
    down_for = checked_at - (unhealthy_since or checked_at)
    shortest = timedelta(seconds=settings.HEALTH_RECHECK_MIN_SECONDS)
    longest = timedelta(seconds=settings.HEALTH_CHECK_INTERVAL_SECONDS)
    return max(shortest, min(down_for, longest))


def next_check_at(server) -> datetime | None:
    """When an enabled server is checked next (None for a disabled or never-checked one: those are
    checked by the next sweep, whenever that is)."""
    if not server.is_enabled or server.last_checked_at is None:
        return None
    if server.health_status in NOT_HEALTHY:
        return server.last_checked_at + recheck_delay(
            unhealthy_since=server.unhealthy_since, checked_at=server.last_checked_at
        )
    return server.last_checked_at + timedelta(seconds=settings.HEALTH_CHECK_INTERVAL_SECONDS)


def due_for_recheck(servers, now: datetime):
    """The unhealthy enabled servers among `servers` whose re-check is due at `now`: `recheck_delay`
    computed by PostgreSQL."""
    down_for = ExpressionWrapper(
        F("last_checked_at") - Coalesce("unhealthy_since", "last_checked_at"), output_field=DurationField()
    )
    delay = Greatest(
        Value(timedelta(seconds=settings.HEALTH_RECHECK_MIN_SECONDS)),
        Least(down_for, Value(timedelta(seconds=settings.HEALTH_CHECK_INTERVAL_SECONDS))),
        output_field=DurationField(),
    )
    due = ExpressionWrapper(F("last_checked_at") + delay, output_field=DateTimeField())
    return (
        servers.filter(is_enabled=True, health_status__in=NOT_HEALTHY, last_checked_at__isnull=False)
        .annotate(recheck_due=due)
        .filter(recheck_due__lte=now)
    )
