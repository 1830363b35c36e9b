"""The gateway servers of a /v0.1 page built by PostgreSQL (servers/v01_sql.py) are field for field what
the Python serializer (servers/api/v01_serializers.server_response) makes of the same rows; the whole
page (catalog/listing.py) carries them in the same order."""

import json
from datetime import UTC, datetime

import pytest

from accounts.choices import AuthMethod
from accounts.principal import principal_for_user
from catalog.listing import registry_page
from servers.models import Server
from servers.naming import server_name
from servers.selectors import servers_page
from servers.v01_responses import server_response
from tests.factories import ServerFactory

pytestmark = pytest.mark.django_db

BASE = "https://mcp.example.test"


@pytest.fixture
def admin(member):
    return principal_for_user(member("root", "mcp-registry-admin"), auth_method=AuthMethod.SESSION)


@pytest.fixture
def tricky(db):
    """Servers that exercise every rule of the shape: titles, stripping, truncation, transports, times."""
    ServerFactory(path="/plain", name="Plain", description="A plain server", tags=["a", "b"])
    ServerFactory(path="/team/nested", name="", description="   ", tags=[])  # title and description fall back
    ServerFactory(path="/unicode", name="Ünïcødé ✓", description="\u00a0\u2003 spaced \u3000\n", tags=["é"])
    ServerFactory(path="/long", name="L" * 150, description="d" * 150, license="MIT")
    ServerFactory(path="/sse", name="SSE", description="legacy", supported_transports=["sse"])
    ServerFactory(path="/both", name="Both", description="x", supported_transports=["streamable-http", "sse"])
    checked = ServerFactory(path="/checked", name="Checked", description="y", health_status="healthy")
    ServerFactory(  # its pinned tools scanned: a scan receipt
        path="/scanned",
        tool_set_digest="ab" * 32,
        tools_scanned_at=datetime(2026, 11, 2, 3, 4, 5, 77, tzinfo=UTC),
        tool_scan_verdict="warnings",
        tool_scan_rules="sha256:" + "cd" * 32,
        tool_scanner_version="4.8.7",
    )
    Server.objects.filter(pk=checked.pk).update(
        last_checked_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),  # no microseconds
        created_at=datetime(2026, 1, 2, 3, 4, 5, 120000, tzinfo=UTC),
    )


@pytest.mark.parametrize("limit", [1, 3, 100])
def test_every_page_is_the_python_serializers_output(admin, tricky, limit):
    after = None  # the last server of the previous page
    while True:
        rows, more = servers_page(admin, after=after and after.path, limit=limit)
        cursor = after and (server_name(after.path), after.version)
        body, shown, last, sql_more = registry_page(admin, after=cursor, limit=limit, base_url=BASE)

        assert json.loads(body) == [server_response(row, base_url=BASE) for row in rows]
        assert (shown, last, sql_more) == (len(rows), (server_name(rows[-1].path), rows[-1].version), more)
        if not more:
            break
        after = rows[-1]


def test_search_and_filters_select_the_same_rows(admin, tricky):
    rows, _ = servers_page(admin, after=None, limit=100, search="team.nes")
    body, shown, _, more = registry_page(admin, after=None, limit=100, base_url=BASE, search="team.nes")

    assert [entry["server"]["_meta"]["io.mcpgateway/internal"]["path"] for entry in json.loads(body)] == [
        "/team/nested"
    ]
    assert (shown, more, [row.path for row in rows]) == (1, False, ["/team/nested"])


def test_a_caller_who_sees_nothing_gets_an_empty_page(member, tricky):
    nobody = principal_for_user(member("nobody"), auth_method=AuthMethod.SESSION)

    assert registry_page(nobody, after=None, limit=10, base_url=BASE) == ("[]", 0, None, False)


def test_an_uncached_page_of_servers_is_one_query(admin, tricky, django_assert_num_queries):
    """Without published versions or virtual servers (facts kept with the pages), a page the process has
    not kept is one query: the keyset choice, the tools each is shown and the JSON together."""
    registry_page(admin, after=None, limit=2, base_url=BASE)

    with django_assert_num_queries(1):
        body, shown, _, more = registry_page(admin, after=None, limit=5, base_url=BASE)

    assert (shown, more, len(json.loads(body))) == (5, True, 5)
