"""The Registry API's answers are bounded: a server's versions come a page at a time (cursor and limit,
as the list does), and no page of either passes REGISTRY_MAX_ANSWER_BYTES; walking the pages still
reaches every version exactly once, in order."""

import datetime as dt

import pytest
from django.utils import timezone

from catalog.models import ServerVersion
from tests.factories import ServerFactory
from tests.servers.spec import validate_server_list

pytestmark = pytest.mark.django_db

NAME = "com.acme/many"


def _versions(count: int, name: str = NAME, padding: int = 0) -> list[str]:
    start = timezone.now() - dt.timedelta(days=1)
    rows = []
    for n in range(count):
        version = f"1.0.{n}"
        document = {"name": name, "description": "many", "version": version}
        if padding:
            document["_meta"] = {
                "io.modelcontextprotocol.registry/publisher-provided": {"pad": "x" * padding}
            }
        when = start + dt.timedelta(seconds=n // 3)  # ties in published_at, broken by id
        rows.append(
            ServerVersion(
                name=name,
                version=version,
                document=document,
                description="many",
                status_changed_at=when,
                published_at=when,
                updated_at=when,
                is_latest=n == count - 1,
            )
        )
    ServerVersion.objects.bulk_create(rows)
    return [row.version for row in sorted(rows, key=lambda r: (r.published_at, r.pk), reverse=True)]


@pytest.fixture
def auth(member, token_for):
    return {"Authorization": f"Bearer {token_for(member('ada', 'mcp-registry-admin'))}"}


def _walk(client, auth, url, **params) -> tuple[list[str], list[dict]]:
    versions, pages, cursor = [], [], None
    while True:
        answer = client.get(url, params | ({"cursor": cursor} if cursor else {}), headers=auth)
        assert answer.status_code == 200, answer.content[:300]
        page = answer.json()
        validate_server_list(page)
        pages.append({"bytes": len(answer.content), "count": page["metadata"]["count"]})
        versions += [entry["server"]["version"] for entry in page["servers"]]
        cursor = page["metadata"].get("nextCursor")
        if not cursor:
            return versions, pages


def test_a_servers_versions_come_a_page_at_a_time_newest_first(client, auth):
    expected = _versions(250)

    walked, pages = _walk(client, auth, f"/v0.1/servers/{NAME.replace('/', '%2F')}/versions")
    big, big_pages = _walk(client, auth, f"/v0.1/servers/{NAME.replace('/', '%2F')}/versions", limit=1000)

    assert walked == expected and big == expected
    assert [page["count"] for page in pages] == [100, 100, 50]
    assert [page["count"] for page in big_pages] == [250]


@pytest.mark.parametrize("limit", ["0", "1001", "x", "-1"])
def test_a_bad_limit_is_refused(client, auth, limit):
    _versions(2)

    answer = client.get(f"/v0.1/servers/{NAME.replace('/', '%2F')}/versions", {"limit": limit}, headers=auth)

    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "INVALID_PARAMETER"


def test_a_cursor_of_another_server_or_query_is_refused(client, auth):
    _versions(3)
    _versions(3, name="com.acme/other")
    url = f"/v0.1/servers/{NAME.replace('/', '%2F')}/versions"
    cursor = client.get(url, {"limit": 1}, headers=auth).json()["metadata"]["nextCursor"]

    other = client.get("/v0.1/servers/com.acme%2Fother/versions", {"cursor": cursor}, headers=auth)
    deleted = client.get(url, {"cursor": cursor, "include_deleted": "true"}, headers=auth)
    forged = client.get(url, {"cursor": cursor[:-2] + "xx"}, headers=auth)

    assert [other.status_code, deleted.status_code, forged.status_code] == [400, 400, 400]


def test_no_page_passes_the_answer_budget_and_every_version_is_still_reached(client, auth, settings):
    settings.REGISTRY_MAX_ANSWER_BYTES = 60_000
    expected = _versions(30, padding=10_000)
    ServerFactory(path="/alpha")

    versions, version_pages = _walk(client, auth, f"/v0.1/servers/{NAME.replace('/', '%2F')}/versions")
    listed, list_pages = _walk(client, auth, "/v0.1/servers", limit=100)

    assert versions == expected
    assert sorted(name for name in listed) == sorted([*expected, "1.0.0"])  # and the gateway's /alpha
    for page in version_pages + list_pages:
        assert page["bytes"] <= 60_000 + 8_000  # the budget counts documents; _meta adds a little each
    assert max(page["count"] for page in version_pages) == 5
