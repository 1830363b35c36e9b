"""Agents on the health websockets (agents/consumers.py) over the real ASGI application and Redis channel
layer: each socket's snapshot and changes carry the agents its caller may see, keyed by their gateway
path, and an agent leaving a socket's view is announced to the sockets that were shown it, and to no
other."""

import pytest
from channels.db import database_sync_to_async
from django.db import transaction

from agents import services
from agents.models import Agent
from servers.check_results import CheckResult
from tests.factories import AgentFactory
from tests.servers.test_health_websockets import (
    PUBLIC_PATH,
    SESSION_PATH,
    TIMEOUT,
    opened,
    run,
    session_cookie,
    socket,
)

pytestmark = pytest.mark.django_db(transaction=True)


def entry(status: str, *, enabled: bool = True, detail: str = "", checked=None, skills: int = 1) -> dict:
    return {**public(status, checked=checked, skills=skills), "detail": detail, "enabled": enabled}


def public(status: str, *, checked=None, skills: int = 1) -> dict:
    return {
        "status": status,
        "last_checked_iso": checked.isoformat() if checked else None,
        "num_tools": 0,
        "kind": "agent",
        "num_skills": skills,
    }


@pytest.fixture
def agents(member):
    owner = member("otto")
    return {
        "public": AgentFactory(path="/travel", is_enabled=True, health_status="healthy", visibility="public"),
        "private": AgentFactory(
            path="/secret", is_enabled=True, health_status="unknown", visibility="private", owner=owner
        ),
        "off": AgentFactory(path="/off", is_enabled=False, health_status="disabled", visibility="public"),
        "owner": owner,
    }


def record(agent: Agent, status: str, detail: str = "d") -> CheckResult:
    result = CheckResult(status=status, detail=detail)
    with transaction.atomic():
        services.agent_health_record(agent=agent, result=result)
    return result


def test_the_public_socket_shows_enabled_public_agents_beside_the_servers(agents):
    async def scenario():
        communicator = socket(PUBLIC_PATH)
        assert await opened(communicator) == {"/travel/a2a": public("healthy")}
        await communicator.disconnect()

    run(scenario)


def test_a_session_sees_the_agents_it_may_see_disabled_ones_included(agents, member):
    owner_cookie, other_cookie = session_cookie(agents["owner"]), session_cookie(member("nina"))

    async def scenario():
        owner, other = socket(SESSION_PATH, session=owner_cookie), socket(SESSION_PATH, session=other_cookie)
        assert await opened(owner) == {
            "/off/a2a": entry("disabled", enabled=False),
            "/secret/a2a": entry("unknown"),
            "/travel/a2a": entry("healthy"),
        }
        assert await opened(other) == {
            "/off/a2a": entry("disabled", enabled=False),
            "/travel/a2a": entry("healthy"),
        }
        await owner.disconnect()
        await other.disconnect()

    run(scenario)


def test_a_check_of_a_private_agent_reaches_its_owner_only(agents):
    cookie = session_cookie(agents["owner"])

    async def scenario():
        owner, anyone = socket(SESSION_PATH, session=cookie), socket(PUBLIC_PATH)
        await opened(owner)
        await opened(anyone)
        result = await database_sync_to_async(record)(agents["private"], "unhealthy", "connection refused")
        assert await owner.receive_json_from(timeout=TIMEOUT) == {
            "/secret/a2a": entry("unhealthy", detail="connection refused", checked=result.checked_at)
        }
        assert await anyone.receive_nothing(timeout=0.5)
        await owner.disconnect()
        await anyone.disconnect()

    run(scenario)


def test_an_agent_leaving_the_public_view_is_null_there_and_only_there(agents):
    async def scenario():
        anyone = socket(PUBLIC_PATH)
        await opened(anyone)
        await database_sync_to_async(services.agent_toggle)(actor=None, agent=agents["public"], enabled=False)
        assert await anyone.receive_json_from(timeout=TIMEOUT) == {"/travel/a2a": None}
        await database_sync_to_async(services.agent_delete)(actor=None, agent=agents["private"])
        assert await anyone.receive_nothing(timeout=0.5)  # never shown: not even its removal is told
        await anyone.disconnect()

    run(scenario)


def test_a_deleted_agent_is_null_to_the_session_that_saw_it(agents):
    cookie = session_cookie(agents["owner"])

    async def scenario():
        owner = socket(SESSION_PATH, session=cookie)
        await opened(owner)
        await database_sync_to_async(services.agent_delete)(actor=None, agent=agents["private"])
        assert await owner.receive_json_from(timeout=TIMEOUT) == {"/secret/a2a": None}
        await owner.disconnect()

    run(scenario)


def test_the_http_snapshot_carries_the_agents_each_caller_may_see(agents, client):
    anyone = client.get("/api/health/ws/health_status").json()
    client.force_login(agents["owner"])
    owner = client.get("/api/health/ws/health_status").json()

    assert {key: value for key, value in anyone.items() if key.endswith("/a2a")} == {
        "/travel/a2a": public("healthy")
    }
    assert sorted(key for key in owner if key.endswith("/a2a")) == ["/off/a2a", "/secret/a2a", "/travel/a2a"]
    assert owner["/secret/a2a"] == entry("unknown")
