"""Callers shared by the /validate and principal cache tests."""

import pytest

from tests.factories import ServerFactory


@pytest.fixture
def timer(member, scope_factory):
    ServerFactory(path="/currenttime")
    ServerFactory(path="/weather")
    scope_factory(
        "time-exec",
        group="timers",
        server_rules=[
            {"server": "currenttime", "methods": ["initialize", "tools/list", "tools/call"], "tools": ["now"]}
        ],
    )
    return member("tim", "timers")
