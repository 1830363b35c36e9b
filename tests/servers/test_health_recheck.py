"""Unhealthy servers are re-checked sooner than the sweep, backing off while they stay down."""

from datetime import timedelta

import pytest
from django.utils import timezone

from servers import services
from servers.choices import HealthStatus
from servers.health import CheckResult
from servers.recheck import next_check_at, recheck_delay
from servers.tasks import recheck_unhealthy_task
from tests.factories import ServerFactory
from tests.servers.test_health_sweep import queued_checks

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def policy(settings):
    settings.HEALTH_RECHECK_MIN_SECONDS = 15
    settings.HEALTH_CHECK_INTERVAL_SECONDS = 300


@pytest.mark.parametrize(
    ("down_for", "delay"),
    [(0, 15), (10, 15), (15, 15), (30, 30), (60, 60), (240, 240), (299, 299), (300, 300), (9000, 300)],
)
def test_the_delay_is_as_long_as_the_outage_within_the_bounds(down_for, delay):
    checked_at = timezone.now()

    got = recheck_delay(unhealthy_since=checked_at - timedelta(seconds=down_for), checked_at=checked_at)

    assert got == timedelta(seconds=delay)


def test_a_failed_check_starts_the_spell_a_second_keeps_it_and_recovery_ends_it():
    server = ServerFactory(path="/flaky", health_status=HealthStatus.HEALTHY)
    first = timezone.now() - timedelta(minutes=3)

    services.server_health_record(server=server, result=CheckResult("unhealthy", "refused", checked_at=first))
    services.server_health_record(server=server, result=CheckResult("unhealthy", "refused"))
    server.refresh_from_db()
    assert server.unhealthy_since == first

    services.server_health_record(server=server, result=CheckResult("healthy", "ok", tools=[]))
    server.refresh_from_db()
    assert server.unhealthy_since is None


def test_disabling_ends_the_spell():
    server = ServerFactory(path="/off", health_status=HealthStatus.UNHEALTHY, unhealthy_since=timezone.now())

    services.server_toggle(actor=None, server=server, enabled=False)

    server.refresh_from_db()
    assert server.unhealthy_since is None


def test_only_unhealthy_enabled_servers_whose_recheck_is_due_are_queued(settings):
    now = timezone.now()
    due = ServerFactory(  # down 30 s at its last check, 70 s ago: due 40 s ago
        path="/due",
        health_status=HealthStatus.UNHEALTHY,
        unhealthy_since=now - timedelta(seconds=100),
        last_checked_at=now - timedelta(seconds=70),
    )
    ServerFactory(  # down 60 s at its last check, 40 s ago: due in 20 s
        path="/waiting",
        health_status=HealthStatus.UNHEALTHY,
        unhealthy_since=now - timedelta(seconds=100),
        last_checked_at=now - timedelta(seconds=40),
    )
    ServerFactory(
        path="/healthy", health_status=HealthStatus.HEALTHY, last_checked_at=now - timedelta(hours=1)
    )
    ServerFactory(
        path="/disabled",
        is_enabled=False,
        health_status=HealthStatus.UNHEALTHY,
        unhealthy_since=now - timedelta(hours=1),
        last_checked_at=now - timedelta(hours=1),
    )

    queued = recheck_unhealthy_task()

    assert queued == 1
    assert [server_id for server_id, _ in queued_checks(settings)] == [due.pk]


def test_the_next_check_shown_follows_the_same_policy():
    now = timezone.now()
    unhealthy = ServerFactory(
        path="/down",
        health_status=HealthStatus.UNHEALTHY,
        unhealthy_since=now - timedelta(seconds=60),
        last_checked_at=now,
    )
    healthy = ServerFactory(path="/up", health_status=HealthStatus.HEALTHY, last_checked_at=now)
    disabled = ServerFactory(path="/off", is_enabled=False, last_checked_at=now)

    assert next_check_at(unhealthy) == now + timedelta(seconds=60)
    assert next_check_at(healthy) == now + timedelta(seconds=300)
    assert next_check_at(disabled) is None
