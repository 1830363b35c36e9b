"""Health checks of agents against a real a2a-sdk agent on loopback (tests/a2a_agents.py): the card and
the main interface in each binding and version, credentials refused and sent, failures explained, the
history, the re-check policy, the sweep and the check queued on enabling."""

import base64
import json
from datetime import timedelta

import pytest
import redis
from django.utils import timezone

from agents import services
from agents.health import check_agent
from agents.models import Agent, AgentHealthTransition
from agents.tasks import check_agent_task, recheck_unhealthy_agents_task, sweep_agent_health_task
from servers.check_results import CheckResult
from servers.choices import HealthStatus
from servers.recheck import due_for_recheck
from tests.a2a_agents import echo_agent
from tests.factories import AgentFactory
from tests.mcp_servers import loopback_socket

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def running():
    agent = echo_agent()
    yield agent
    agent.stop()


@pytest.fixture(scope="module")
def guarded():
    agent = echo_agent(requires=("X-Api-Key", "k-123"))
    yield agent
    agent.stop()


def queued_agent_checks(settings) -> list[int]:
    """The agent ids of the check tasks on the embedded Redis broker, in the order workers take them."""
    checks = []
    for raw in reversed(redis.Redis.from_url(settings.REDIS_URL).lrange("celery", 0, -1)):
        message = json.loads(raw)
        if message["headers"]["task"] == "agents.check_agent_task":
            args, _, _ = json.loads(base64.b64decode(message["body"]))
            checks.append(args[0])
    return checks


@pytest.mark.parametrize(
    ("transport", "version", "suffix", "detail"),
    [
        ("JSONRPC", "1.0", "", "card and JSON-RPC interface answered"),
        ("JSONRPC", "0.3", "", "card and JSON-RPC interface answered"),
        ("HTTP+JSON", "1.0", "rest", "card and HTTP+JSON interface answered"),
        ("HTTP+JSON", "0.3", "rest", "card and HTTP+JSON interface answered"),
    ],
)
def test_a_served_agent_is_healthy_in_each_binding_and_version(running, transport, version, suffix, detail):
    agent = AgentFactory(
        is_enabled=True,
        url=running.url("/") + suffix,
        preferred_transport=transport,
        protocol_version=version,
    )

    result = check_agent(agent)

    assert (result.status, result.detail) == (HealthStatus.HEALTHY, detail)


def test_a_grpc_interface_is_not_probed_but_its_card_is(running):
    agent = AgentFactory(
        is_enabled=True, url=running.url("/"), preferred_transport="GRPC", protocol_version="1.0"
    )

    assert check_agent(agent).detail == "card answered (GRPC interface not probed)"


def test_an_agent_behind_a_credential_is_auth_refused_without_it_and_healthy_with_it(guarded):
    agent = AgentFactory(
        is_enabled=True, url=guarded.url("/"), preferred_transport="JSONRPC", protocol_version="1.0"
    )
    refused = check_agent(agent)
    agent.headers, agent.upstream_auth = {"X-Api-Key": "k-123"}, "shared_headers"

    healthy = check_agent(agent)

    assert (refused.status, refused.detail) == (
        HealthStatus.AUTH_REFUSED,
        "401 Unauthorized from the agent card: credentials refused",
    )
    assert healthy.status == HealthStatus.HEALTHY
    # the card and the interface both got it
    assert [seen.get(b"x-api-key") for seen in guarded.guard.seen[-2:]] == [b"k-123", b"k-123"]


def test_failures_say_what_went_wrong(running, live_server):
    closed = loopback_socket()
    port = closed.getsockname()[1]
    closed.close()
    nothing = AgentFactory(is_enabled=True, url=f"http://127.0.0.1:{port}/", preferred_transport="JSONRPC")
    not_an_agent = AgentFactory(is_enabled=True, url=f"{live_server.url}/", preferred_transport="JSONRPC")
    wrong_interface = AgentFactory(
        is_enabled=True, url=running.url("/nothing-here"), preferred_transport="JSONRPC"
    )

    assert (check_agent(nothing).status, check_agent(nothing).detail) == (
        HealthStatus.UNHEALTHY,
        "connection refused",
    )
    assert check_agent(not_an_agent).detail == (
        f"no agent card at {live_server.url}/.well-known/agent-card.json (HTTP 404)"
    )
    assert check_agent(wrong_interface).detail == (
        f"HTTP 307 from the JSON-RPC interface: a redirect to {running.url('/nothing-here/')}"
    )


def test_a_header_that_cannot_be_sent_is_named_without_its_value(running):
    agent = AgentFactory(is_enabled=True, url=running.url("/"), headers={"X-Api-Key": "secret\nvalue"})

    result = check_agent(agent)

    assert (result.status, result.detail) == (
        HealthStatus.UNHEALTHY,
        "outbound header 'X-Api-Key' cannot be sent: not one line of ASCII",
    )


def test_the_check_task_records_the_outcome_and_each_change_of_status_once(running):
    agent = AgentFactory(
        is_enabled=True, url=running.url("/"), preferred_transport="JSONRPC", health_status="unknown"
    )

    check_agent_task(agent.pk)
    check_agent_task(agent.pk)
    agent.refresh_from_db()

    assert (agent.health_status, agent.health_detail) == ("healthy", "card and JSON-RPC interface answered")
    assert agent.last_checked_at is not None and agent.unhealthy_since is None
    assert list(AgentHealthTransition.objects.values_list("from_status", "to_status", "detail")) == [
        ("unknown", "healthy", "card and JSON-RPC interface answered")
    ]


def test_an_unhealthy_agent_is_rechecked_with_the_servers_backoff(settings):
    settings.HEALTH_RECHECK_MIN_SECONDS, settings.HEALTH_CHECK_INTERVAL_SECONDS = 15, 300
    agent = AgentFactory(is_enabled=True, health_status="healthy")
    started = timezone.now() - timedelta(seconds=100)
    services.agent_health_record(
        agent=agent, result=CheckResult(HealthStatus.UNHEALTHY, "down", checked_at=started)
    )
    services.agent_health_record(
        agent=agent,
        result=CheckResult(HealthStatus.UNHEALTHY, "down", checked_at=started + timedelta(seconds=40)),
    )
    agent.refresh_from_db()
    due = due_for_recheck(Agent.objects.all(), started + timedelta(seconds=79))
    later = due_for_recheck(Agent.objects.all(), started + timedelta(seconds=80))

    assert agent.unhealthy_since == started
    assert (list(due), [a.pk for a in later]) == ([], [agent.pk])  # 40 s down: checked 40 s after
    assert recheck_unhealthy_agents_task() == 1
    assert queued_agent_checks(settings) == [agent.pk]


def test_a_check_of_an_agent_disabled_meanwhile_writes_nothing():
    agent = AgentFactory(is_enabled=True, health_status="unknown")
    Agent.objects.filter(pk=agent.pk).update(is_enabled=False, health_status="disabled")

    assert services.agent_health_record(agent=agent, result=CheckResult(HealthStatus.HEALTHY, "ok")) is False
    assert Agent.objects.get(pk=agent.pk).health_status == "disabled"


def test_the_sweep_queues_enabled_agents_least_recently_checked_first(settings):
    now = timezone.now()
    recent = AgentFactory(is_enabled=True, path="/recent", last_checked_at=now)
    never = AgentFactory(is_enabled=True, path="/never", last_checked_at=None)
    AgentFactory(path="/off", is_enabled=False)

    assert sweep_agent_health_task() == 2
    assert queued_agent_checks(settings) == [never.pk, recent.pk]


def test_enabling_queues_a_check_and_disabling_records_the_change(
    settings, django_capture_on_commit_callbacks
):
    agent = services.agent_create(
        actor=None, path="/travel", name="T", description="d", url="http://agent.example/", version="1"
    )
    with django_capture_on_commit_callbacks(execute=True):
        services.agent_toggle(actor=None, agent=agent, enabled=True)
    services.agent_toggle(actor=None, agent=agent, enabled=False)

    assert queued_agent_checks(settings) == [agent.pk]
    assert list(AgentHealthTransition.objects.values_list("from_status", "to_status", "detail")) == [
        ("disabled", "unknown", "enabled"),
        ("unknown", "disabled", "disabled"),
    ]
