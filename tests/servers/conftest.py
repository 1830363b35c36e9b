"""Callers shared by the dashboard page and dashboard API tests; the changing server of the pinning tests."""

import pytest

from gateway import pins_seen
from servers.health import check_and_record
from servers.models import Server
from tests.factories import ServerFactory
from tests.shifting_tools import ShiftingTools


@pytest.fixture
def operator(member, scope_factory):
    """Sees weather and current time; may toggle, check, edit weather and register /newserver only."""
    scope_factory(
        "ops",
        group="ops",
        ui={
            "list_service": ["weather", "currenttime"],
            "toggle_service": ["weather"],
            "health_check_service": ["weather"],
            "modify_service": ["weather"],
            "register_service": ["newserver"],
        },
    )
    return member("olga", "ops")


@pytest.fixture
def viewer(member, scope_factory):
    """Sees weather, may do nothing to it."""
    scope_factory("read", group="readers", ui={"list_service": ["weather"]})
    return member("vera", "readers")


@pytest.fixture
def as_operator(client, operator):
    client.force_login(operator)
    return client


@pytest.fixture
def shifty():
    """A real MCP server whose tools and prompts a test changes (tests/shifting_tools.py)."""
    server = ShiftingTools().start()
    pins_seen.forget()
    yield server
    server.stop()


@pytest.fixture
def pinned(shifty):
    """The server registered at /shifty and discovered once: what it offered then is pinned."""
    server = ServerFactory(path="/shifty", proxy_pass_url=shifty.url, health_status="unknown")
    check_and_record(server.pk)
    return Server.objects.get(pk=server.pk)
