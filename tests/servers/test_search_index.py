"""`search=` narrowed by the trigram indexes of names and descriptions (servers/search_index.py): the same
rows as the plain substring tests for every kind of term, and a plan that uses the indexes."""

import pytest
from django.db import connection
from django.db.models import Q

from accounts.principal import Principal
from servers.models import Server
from servers.search_index import trigram_prefilter
from servers.selectors import _registry_name, servers_page_query
from tests.factories import ServerFactory

pytestmark = pytest.mark.django_db

PATHS = ["/weather", "/team/weather-eu", "/clock", "/ab", "/team/Billing", "/io-tools", "/x_y-z"]
DESCRIPTIONS = {
    "/clock": "Current time in any time zone",
    "/ab": "Forecasts for Lisbon and io.mcpgateway/weather look-alikes",
    "/team/Billing": "Invoices, 100% of them",
}
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
    "time zone",  # in a description only
    "LISBON",
    "100%",
    "io.mcpgateway/weather",  # a name, and inside a description
]


@pytest.fixture
def admin():
    return Principal(username="ada", auth_method="test", is_admin=True)


def paths(queryset) -> list[str]:
    return list(queryset.values_list("path", flat=True))


@pytest.mark.parametrize("term", TERMS)
def test_the_prefilter_keeps_every_row_the_substring_test_finds(admin, term):
    for path in PATHS:
        ServerFactory(path=path, description=DESCRIPTIONS.get(path, ""))
    exact = Server.objects.alias(registry_name=_registry_name()).filter(
        Q(registry_name__icontains=term) | Q(description__icontains=term)
    )
    prefiltered = trigram_prefilter(Server.objects.all(), term)

    assert set(paths(exact)) <= set(paths(prefiltered))
    assert paths(servers_page_query(admin, after=None, search=term)) == sorted(paths(exact))


def test_the_expected_rows_for_some_terms(admin):
    for path in PATHS:
        ServerFactory(path=path, description=DESCRIPTIONS.get(path, ""))

    def found(term):
        return paths(servers_page_query(admin, after=None, search=term))

    assert found("WEATH") == ["/ab", "/team/weather-eu", "/weather"]  # /ab by its description
    assert found("io.mcpgateway/cl") == ["/clock"]
    assert found("io.mcp") == sorted(PATHS)
    assert found("_y") == ["/x_y-z"]
    assert found("nothing") == []
    assert found("time ZONE") == ["/clock"]
    assert found("io.mcpgateway/weather") == ["/ab", "/weather"]


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
    assert "servers_server_description_trigrams" in plan


@pytest.mark.parametrize("index", ["servers_server_name_trigrams", "servers_server_description_trigrams"])
def test_the_indexes_keep_no_pending_list(index):
    """New rows go straight into the index, so a search after a bulk registration stays an index lookup."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = %s", [index])
        assert cursor.fetchone() == (["fastupdate=off"],)
