"""Callers shared by the dashboard page and dashboard API tests."""

import pytest


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
