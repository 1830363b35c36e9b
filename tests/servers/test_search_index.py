"""`search=` narrowed by the name trigram index (servers/search_index.py): the same rows as the plain
substring test for every kind of term, and a plan that uses the index."""

import pytest
from django.db import connection

from accounts.principal import Principal
from servers.models import Server
from servers.search_index import name_trigram_prefilter
from servers.selectors import _registry_name, servers_page_query
from tests.factories import ServerFactory

pytestmark = pytest.mark.django_db

PATHS = ["/weather", "/team/weather-eu", "/clock", "/ab", "/team/Billing", "/io-tools", "/x_y-z"]
TERMS = [
    "WEATH",  # case-insensitive
    "team.weather",  # across a path segment
    "io.mcpgateway/cl",  # across the prefix
    "gateway/team.w",
    "/we",  # short after the prefix
    "io.mcp",  # inside the prefix: every row
    "io-t",
    "ab",  # shorter than a trigram
    "y-z",
    "eu",
    "nothing",
    "wéather",  # no such trigram
    "%",
    "_y",
]


@pytest.fixture
def admin():
    return Principal(username="ada", auth_method="test", is_admin=True)


def paths(queryset) -> list[str]:
    return list(queryset.values_list("path", flat=True))


@pytest.mark.parametrize("term", TERMS)
def test_the_prefilter_keeps_every_row_the_substring_test_finds(admin, term):
    for path in PATHS:
        ServerFactory(path=path)
    exact = Server.objects.alias(registry_name=_registry_name()).filter(registry_name__icontains=term)
    prefiltered = name_trigram_prefilter(Server.objects.all(), term)

    assert set(paths(exact)) <= set(paths(prefiltered))
    assert paths(servers_page_query(admin, after=None, search=term)) == sorted(paths(exact))


def test_the_expected_rows_for_some_terms(admin):
    for path in PATHS:
        ServerFactory(path=path)

    def found(term):
        return paths(servers_page_query(admin, after=None, search=term))

    assert found("WEATH") == ["/team/weather-eu", "/weather"]
    assert found("io.mcpgateway/cl") == ["/clock"]
    assert found("io.mcp") == sorted(PATHS)
    assert found("_y") == ["/x_y-z"]
    assert found("nothing") == []


def test_a_search_is_answered_from_the_index(admin):
    for n in range(50):
        ServerFactory(path=f"/bench-{n:05d}")
    query = servers_page_query(admin, after=None, search="bench-0004").values("id")[:101]
    sql, params = query.query.sql_with_params()

    with connection.cursor() as cursor:
        # With 50 rows a scan in path order is cheaper; without it, the index answers (a bitmap scan).
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_indexscan = off")
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())

    assert "servers_server_name_trigrams" in plan


def test_the_index_keeps_no_pending_list():
    """New rows go straight into the index, so a search after a bulk registration stays an index lookup."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = 'servers_server_name_trigrams'")
        assert cursor.fetchone() == (["fastupdate=off"],)
