"""Listings kept per process (servers/cache.LISTINGS): /v0.1 pages per view of the servers, dropped when
a server changes; a health check that only records its time leaves them, one that changes a status not."""

import datetime as dt

import pytest

from servers.cache import HEALTH, LISTINGS
from servers.health import CheckResult
from servers.models import Server
from servers.services import server_health_record, server_toggle
from tests.factories import ServerFactory

pytestmark = pytest.mark.django_db


def names(client, token) -> list[str]:
    body = client.get("/v0.1/servers", headers={"Authorization": f"Bearer {token}"}).json()
    return [entry["server"]["title"] for entry in body["servers"]]


def test_a_page_is_kept_until_a_server_is_saved(client, member, token_for):
    weather = ServerFactory(path="/weather", name="Weather")
    ServerFactory(path="/time", name="Time")
    token = token_for(member("ada", "mcp-registry-admin"))

    first = names(client, token)
    Server.objects.filter(path="/time").update(name="Clock")  # behind the cache's back: no signal
    kept = names(client, token)
    server_toggle(actor=None, server=weather, enabled=False)
    after_save = names(client, token)

    assert first == ["Time", "Weather"]
    assert kept == ["Time", "Weather"]
    assert after_save == ["Clock", "Weather"]


def test_principals_with_different_views_never_share_a_page(client, member, scope_factory, token_for):
    for path in ("/one", "/two", "/three"):
        ServerFactory(path=path, name=path[1:])
    scope_factory("two-only", group="g", server_rules=[{"server": "two", "methods": "*", "tools": "*"}])
    scope_factory("two-too", group="h", ui={"list_service": ["two"]})

    admin = names(client, token_for(member("ada", "mcp-registry-admin")))
    scoped = names(client, token_for(member("gus", "g")))
    same_view = names(client, token_for(member("hal", "h")))
    nobody = names(client, token_for(member("nil")))

    assert admin == ["one", "three", "two"]
    assert scoped == ["two"]
    assert same_view == ["two"]
    assert nobody == []


def test_a_new_status_moves_the_health_epoch_and_leaves_the_listings():
    server = ServerFactory(path="/weather", health_status="healthy")
    start = (LISTINGS.epoch(), HEALTH.epoch())

    server_health_record(
        server=server, result=CheckResult("healthy", "", checked_at=dt.datetime(2026, 11, 23, tzinfo=dt.UTC))
    )
    after_same_status = (LISTINGS.epoch(), HEALTH.epoch())
    server_health_record(server=server, result=CheckResult("unhealthy", "connection refused"))
    after_new_status = (LISTINGS.epoch(), HEALTH.epoch())
    server_health_record(server=server, result=CheckResult("unhealthy", "connection refused again"))
    after_still_down = (LISTINGS.epoch(), HEALTH.epoch())

    server.refresh_from_db()
    assert after_same_status == start
    assert after_new_status[0] == start[0]
    assert after_new_status[1] != start[1]
    assert after_still_down == after_new_status
    assert (server.health_status, server.health_detail) == ("unhealthy", "connection refused again")
    assert server.unhealthy_since is not None
