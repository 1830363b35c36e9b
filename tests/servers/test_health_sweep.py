"""The health sweep fans out one check per enabled server; status changes leave a history row."""

import base64
import json
from datetime import timedelta

import pytest
import redis
from django.utils import timezone

from servers import services
from servers.choices import HealthStatus
from servers.health import CheckResult
from servers.models import HealthTransition
from servers.tasks import SWEEP_LOCK, sweep_health_task
from tests.factories import ServerFactory

pytestmark = pytest.mark.django_db


def queued_checks(settings, *, in_order: bool = False) -> list[tuple[int, str | None]]:
    """(server id, expires) of every check task on the embedded Redis broker, sorted by id or, with
    `in_order`, in the order workers take them (the broker pushes on the left and pops on the right)."""
    checks = []
    for raw in reversed(redis.Redis.from_url(settings.REDIS_URL).lrange("celery", 0, -1)):
        message = json.loads(raw)
        if message["headers"]["task"] == "servers.check_server_task":
            args, _, _ = json.loads(base64.b64decode(message["body"]))
            checks.append((args[0], message["headers"]["expires"]))
    return checks if in_order else sorted(checks)


def test_the_sweep_queues_one_expiring_check_per_enabled_server(settings):
    settings.HEALTH_CHECK_INTERVAL_SECONDS = 60
    on = [ServerFactory(path=f"/on{n}").pk for n in range(3)]
    ServerFactory(path="/off", is_enabled=False)

    queued = sweep_health_task()

    checks = queued_checks(settings)
    assert queued == 3
    assert [server_id for server_id, _ in checks] == sorted(on)
    assert all(expires is not None for _, expires in checks)


def test_the_least_recently_checked_servers_are_queued_first(settings):
    now = timezone.now()
    recent = ServerFactory(path="/recent", last_checked_at=now)
    never = ServerFactory(path="/never", last_checked_at=None)
    stale = ServerFactory(path="/stale", last_checked_at=now - timedelta(minutes=10))

    sweep_health_task()

    assert [server_id for server_id, _ in queued_checks(settings, in_order=True)] == [
        never.pk,
        stale.pk,
        recent.pk,
    ]


def test_a_second_sweep_queues_every_server_again(settings):
    ServerFactory(path="/a")

    sweep_health_task()
    sweep_health_task()

    assert len(queued_checks(settings)) == 2


def test_a_sweep_while_another_is_queueing_queues_nothing(settings):
    ServerFactory(path="/a")
    client = redis.Redis.from_url(settings.REDIS_URL)
    client.set(SWEEP_LOCK, "another sweep", ex=60)

    assert sweep_health_task() == 0

    assert queued_checks(settings) == []
    assert client.get(SWEEP_LOCK) == b"another sweep"  # not its lock to release
    client.delete(SWEEP_LOCK)
    assert sweep_health_task() == 1


def test_a_status_change_records_one_transition_and_a_repeat_records_none():
    server = ServerFactory(path="/t", health_status=HealthStatus.UNKNOWN)

    services.server_health_record(server=server, result=CheckResult(status="healthy", detail="ok", tools=[]))
    services.server_health_record(server=server, result=CheckResult(status="healthy", detail="ok", tools=[]))
    services.server_health_record(
        server=server, result=CheckResult(status="unhealthy", detail="connection refused")
    )

    rows = list(HealthTransition.objects.values_list("from_status", "to_status", "detail"))
    assert rows == [("unknown", "healthy", "ok"), ("healthy", "unhealthy", "connection refused")]


def test_enabling_and_disabling_are_transitions_too():
    server = ServerFactory(path="/x", is_enabled=True, health_status=HealthStatus.HEALTHY)

    services.server_toggle(actor=None, server=server, enabled=False)
    services.server_toggle(actor=None, server=server, enabled=True)

    rows = list(HealthTransition.objects.values_list("from_status", "to_status", "detail"))
    assert rows == [("healthy", "disabled", "disabled"), ("disabled", "unknown", "enabled")]
