"""/v0.1 pages over the gateway's servers and the published versions together (catalog/listing.py)."""

import datetime as dt
import json

import pytest
from django.utils import timezone

from catalog.listing_sql import versions_page_rows
from catalog.models import ServerVersion, Upstream
from catalog.responses import version_response
from tests.factories import ServerFactory, stored_version
from tests.servers.spec import validate_server_list

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_token(member, token_for):
    return token_for(member("ada", "mcp-registry-admin"))


@pytest.fixture
def mixed(db):
    """Gateway servers (io.mcpgateway/…) and published names on both sides of them."""
    for path in ("/alpha", "/team/weather", "/zeta"):
        ServerFactory(path=path)
    stored_version("com.acme/maps", "1.0.0", latest=False)
    stored_version("com.acme/maps", "1.1.0", latest=True)
    stored_version("io.github.x/tool", "0.1.0", latest=True)
    stored_version("io.mcpgateway-extra/z", "1.0.0", latest=True)  # sorts after every io.mcpgateway/ name
    stored_version("zz.last/one", "3.0.0", latest=True, status="deprecated", message="use two")
    stored_version("aa.first/one", "1.0.0", latest=True, status="deleted")


def _walk(client, token, limit, **params):
    entries, cursor = [], None
    while True:
        query = {"limit": limit, **params} | ({"cursor": cursor} if cursor else {})
        page = client.get("/v0.1/servers", query, headers={"Authorization": f"Bearer {token}"}).json()
        validate_server_list(page)
        entries += [(e["server"]["name"], e["server"]["version"]) for e in page["servers"]]
        cursor = page["metadata"].get("nextCursor")
        if not cursor:
            return entries


EXPECTED = [
    ("com.acme/maps", "1.0.0"),
    ("com.acme/maps", "1.1.0"),
    ("io.github.x/tool", "0.1.0"),
    ("io.mcpgateway-extra/z", "1.0.0"),
    ("io.mcpgateway/alpha", "1.0.0"),
    ("io.mcpgateway/team.weather", "1.0.0"),
    ("io.mcpgateway/zeta", "1.0.0"),
    ("zz.last/one", "3.0.0"),
]


@pytest.mark.parametrize("limit", [1, 2, 3, 100])
def test_pages_walk_both_kinds_in_one_order_each_entry_once(client, admin_token, mixed, limit):
    assert _walk(client, admin_token, limit) == EXPECTED


def test_filters_apply_to_both_kinds(client, admin_token, mixed):
    latest = _walk(client, admin_token, 3, version="latest")
    searched = _walk(client, admin_token, 100, search="maps")
    with_deleted = _walk(client, admin_token, 2, include_deleted="true")
    since = _walk(
        client, admin_token, 100, updated_since=(timezone.now() - dt.timedelta(hours=1)).isoformat()
    )

    assert latest == [entry for entry in EXPECTED if entry != ("com.acme/maps", "1.0.0")]
    assert searched == [("com.acme/maps", "1.0.0"), ("com.acme/maps", "1.1.0")]
    assert with_deleted == [("aa.first/one", "1.0.0"), *EXPECTED]
    assert since == with_deleted  # updated_since lists deleted versions, so that mirrors learn of them


def test_a_cursor_from_another_query_is_refused(client, admin_token, mixed):
    auth = {"Authorization": f"Bearer {admin_token}"}
    cursor = client.get("/v0.1/servers", {"limit": 1}, headers=auth).json()["metadata"]["nextCursor"]

    answer = client.get(
        "/v0.1/servers", {"limit": 1, "include_deleted": "true", "cursor": cursor}, headers=auth
    )

    assert answer.status_code == 400
    assert answer.json()["error"]["message"].startswith("The cursor belongs to a different query")


def test_the_sql_page_is_the_python_response_of_each_version(mixed):
    upstream = Upstream.objects.create(name="official", url="https://registry.example.test")
    stored_version(
        "io.mirrored/one",
        "1.0.0",
        latest=True,
        upstream=upstream,
        title="Mirrored",
        websiteUrl="https://x.test",
    )
    rows = ServerVersion.objects.select_related("upstream").order_by("name", "version")

    built = versions_page_rows(list(rows.values_list("id", flat=True)), base_url="https://gw.example.test")

    assert [(name, version) for name, version, _ in built] == [(row.name, row.version) for row in rows]
    assert [json.loads(text) for _, _, text in built] == [
        version_response(row, base_url="https://gw.example.test") for row in rows
    ]
    assert json.loads(built[-2][2])["_meta"]["io.mcpgateway/mirror"]["upstream"] == "official"


def test_published_versions_are_listed_to_every_caller_and_gateway_servers_by_their_rules(
    client, member, token_for, mixed, settings
):
    settings.PUBLIC_LISTING = True
    nobody = token_for(member("nobody"))

    assert _walk(client, nobody, 100) == [e for e in EXPECTED if not e[0].startswith("io.mcpgateway/")]
    assert client.get("/v0.1/servers").json()["metadata"]["count"] == 5
