"""Operators' quarantines and limits are shown where the target is: on the dashboard's row and on the
server's page, in words, with what applies through a tag or to every target; nothing for a server none
applies to."""

import re

import pytest

from limits.services import limit_set, quarantine_set
from tests.factories import ServerFactory
from tests.servers.test_dashboard import html

pytestmark = pytest.mark.django_db


def shown(page: str) -> list[tuple[str, str]]:
    return re.findall(r'class="restriction[^"]*" data-restriction="(\w+)">([^<]+)<', page)


@pytest.fixture
def restricted(db):
    ServerFactory(path="/weather", name="Weather", tags=["finance"])
    ServerFactory(path="/clock", name="Clock")
    quarantine_set(actor=None, kind="server", name="/weather", reason="leaking data, under review")
    limit_set(
        actor=None,
        caller_kind="group",
        caller="ops",
        target_kind="tag",
        target="finance",
        windows=[{"per": "day", "limit": 1000}, {"per": "minute", "limit": 60}],
    )
    limit_set(
        actor=None,
        caller_kind="",
        caller="",
        target_kind="server",
        target="/weather",
        windows=[{"per": "second", "limit": 5}],
        counts=["tools"],
    )


def test_the_servers_page_and_its_dashboard_row_say_what_applies(admin_client, restricted):
    page = html(admin_client.get("/servers/weather"))
    dashboard = html(admin_client.get("/"))
    weather_row = dashboard.split('data-path="/weather"')[1].split("</tr>")[0]
    clock_row = dashboard.split('data-path="/clock"')[1].split("</tr>")[0]

    by_tag = "Limit: 60 calls a minute, 1000 a day for each member of ops (every server tagged finance)"
    assert shown(page) == [
        ("quarantine", "Quarantined by an operator: leaking data, under review"),
        ("limit", "Limit: 5 tools/call a second for everyone together"),
        ("limit", by_tag),
    ]
    assert shown(weather_row) == shown(page)
    assert shown(clock_row) == []
