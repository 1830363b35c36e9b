"""A server's health over a period, from its stored transitions (`HealthTransition`): the share of the
time it was healthy, and the stretches of each state in order, for the server page's bar."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from servers.choices import HealthStatus
from servers.models import HealthTransition, Server


@dataclass(frozen=True)
class Stretch:
    status: str
    start: float  # where it begins and ends, as fractions of the period (0 to 1)
    end: float

    @property
    def x(self) -> int:  # on a bar 1000 units wide
        return round(self.start * 1000)

    @property
    def width(self) -> int:
        return max(1, round((self.end - self.start) * 1000))


@dataclass(frozen=True)
class Uptime:
    healthy: float | None  # the healthy share of the time the server was checked; None: never checked
    stretches: list[Stretch]


def uptime(server: Server, *, since: datetime, now: datetime) -> Uptime:
    """Healthy share and stretches of `server` between `since` and `now` (time before its first check,
    unknown, and while disabled is not counted against it)."""
    changes = list(
        HealthTransition.objects.filter(server=server, at__gt=since, at__lte=now).order_by("at", "id")
    )
    earlier = HealthTransition.objects.filter(server=server, at__lte=since).order_by("-at", "-id").first()
    if earlier is not None:
        status = earlier.to_status
    elif changes:
        status = changes[0].from_status
    else:
        status = server.health_status
    period = (now - since).total_seconds() or 1.0
    moments = [(since, status), *((change.at, change.to_status) for change in changes)]
    stretches, counted, healthy = [], timedelta(), timedelta()
    for (start, state), (end, _) in zip(moments, [*moments[1:], (now, None)], strict=True):
        if end <= start:
            continue
        stretches.append(
            Stretch(state, (start - since).total_seconds() / period, (end - since).total_seconds() / period)
        )
        if state not in (HealthStatus.UNKNOWN, HealthStatus.DISABLED):
            counted += end - start
            healthy += end - start if state == HealthStatus.HEALTHY else timedelta()
    share = healthy / counted if counted else None
    return Uptime(healthy=share, stretches=stretches)
