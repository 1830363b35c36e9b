"""/v0.1: the official MCP Registry listing API, checked against openapi.yaml and server.schema.json."""

import datetime as dt
import math
from urllib.parse import quote

import pytest
from django.utils import timezone

from servers.models import Server
from tests.factories import ServerFactory
from tests.servers.spec import validate_server_list, validate_server_response

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_token(member, token_for):
    return token_for(member("ada", "mcp-registry-admin"))


def get(client, url, token=None, **params):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return client.get(url, params, headers=headers)


def test_an_entry_has_exactly_the_interface_shape(client, admin_token):
    checked = dt.datetime(2026, 11, 1, 12, 30, tzinfo=dt.UTC)
    server = ServerFactory(
        path="/currenttime",
        name="Current Time",
        description="Tells the time in any time zone",
        tags=["time", "utility"],
        license="MIT",
        num_tools=2,
        health_status="healthy",
        last_checked_at=checked,
    )

    body = get(client, "/v0.1/servers", admin_token).json()

    validate_server_list(body)
    assert body["metadata"] == {"count": 1}
    assert body["servers"][0] == {
        "server": {
            "name": "io.mcpgateway/currenttime",
            "description": "Tells the time in any time zone",
            "version": "1.0.0",
            "title": "Current Time",
            "remotes": [{"type": "streamable-http", "url": "http://testserver/currenttime/mcp"}],
            "_meta": {
                "io.mcpgateway/internal": {
                    "path": "/currenttime",
                    "is_enabled": True,
                    "health_status": "healthy",
                    "num_tools": 2,
                    "tags": ["time", "utility"],
                    "license": "MIT",
                }
            },
        },
        "_meta": {
            "io.mcpgateway/registry": {"last_checked": "2026-11-01T12:30:00Z", "health_status": "healthy"},
            "io.modelcontextprotocol.registry/official": {
                "status": "active",
                "publishedAt": server.created_at.isoformat().replace("+00:00", "Z"),
                "updatedAt": server.updated_at.isoformat().replace("+00:00", "Z"),
                "isLatest": True,
            },
        },
    }


def test_long_or_empty_descriptions_and_sse_servers_still_validate(client, admin_token, settings):
    settings.GATEWAY_PUBLIC_URL = "https://gateway.example.test"
    ServerFactory(path="/long", description="x" * 500, name="N" * 190)
    ServerFactory(path="/empty", description="", name="Empty", supported_transports=["sse"])
    ServerFactory(path="/team/weather", name="Team weather")

    body = get(client, "/v0.1/servers", admin_token).json()

    validate_server_list(body)
    by_name = {entry["server"]["name"]: entry["server"] for entry in body["servers"]}
    assert len(by_name["io.mcpgateway/long"]["description"]) == 100
    assert by_name["io.mcpgateway/empty"]["description"] == "Empty"
    assert by_name["io.mcpgateway/empty"]["remotes"] == [
        {"type": "sse", "url": "https://gateway.example.test/empty/sse"}
    ]
    assert all("packages" not in entry for entry in by_name.values())
    assert "io.mcpgateway/team.weather" in by_name


def test_no_token_or_a_bad_token_is_401_unauthorized(client):
    missing = get(client, "/v0.1/servers")
    garbage = get(client, "/v0.1/servers", "not-a-token")

    for response in (missing, garbage):
        assert response.status_code == 401
        assert set(response.json()) == {"error"}
        assert response.json()["error"]["code"] == "UNAUTHORIZED"
        assert response["WWW-Authenticate"] == 'Bearer realm="mcp-gateway-registry"'


def test_an_expired_token_is_401_unauthorized(client, member):
    from accounts.models import IssuedToken
    from accounts.tokens import encode

    user = member("old")
    encoded = encode(
        username="old", scopes=[], groups=[], admin=False, lifetime=dt.timedelta(seconds=-1), kind="user"
    )
    IssuedToken.objects.create(jti=encoded.jti, user=user, kind="user", expires_at=encoded.expires_at)

    response = get(client, "/v0.1/servers", encoded.token)

    assert response.status_code == 401
    assert response.json() == {"error": {"code": "UNAUTHORIZED", "message": "The token has expired."}}


@pytest.mark.parametrize("limit", ["0", "1001", "-1", "abc", "1.5", "", "99999999999"])
def test_a_limit_outside_1_to_1000_is_400_invalid_parameter(client, admin_token, limit):
    response = get(client, "/v0.1/servers", admin_token, limit=limit)

    assert response.status_code == 400
    assert response.json() == {
        "error": {"code": "INVALID_PARAMETER", "message": "limit must be an integer from 1 to 1000."}
    }


def test_the_caller_sees_only_servers_it_may_access(client, member, scope_factory, token_for):
    for path in ("/one", "/two", "/three"):
        ServerFactory(path=path)
    scope_factory("two-only", group="g", server_rules=[{"server": "two", "methods": "*", "tools": "*"}])

    body = get(client, "/v0.1/servers", token_for(member("gus", "g"))).json()
    nobody = get(client, "/v0.1/servers", token_for(member("nil"))).json()

    assert [e["server"]["name"] for e in body["servers"]] == ["io.mcpgateway/two"]
    assert nobody == {"servers": [], "metadata": {"count": 0}}


def walk(client, token, limit, **params):
    names, pages, cursor = [], 0, None
    while True:
        query = {"limit": limit, **params, **({"cursor": cursor} if cursor else {})}
        response = get(client, "/v0.1/servers", token, **query)
        assert response.status_code == 200, response.json()
        body = response.json()
        validate_server_list(body)
        assert body["metadata"]["count"] == len(body["servers"])
        assert len(body["servers"]) <= limit
        names += [entry["server"]["name"] for entry in body["servers"]]
        pages += 1
        cursor = body["metadata"].get("nextCursor")
        if cursor is None:
            return names, pages


@pytest.mark.parametrize("limit", [1, 7, 100, 1000])
def test_walking_250_servers_page_by_page_returns_each_visible_server_once(
    client, member, scope_factory, token_for, limit
):
    Server.objects.bulk_create(
        Server(
            path=f"/s{n:03d}",
            name=f"S{n}",
            proxy_pass_url=f"http://127.0.0.1:{9000 + n}/mcp",
            is_enabled=True,
        )
        for n in range(250)
    )
    visible = [f"/s{n:03d}" for n in range(250) if n % 3 != 0]
    scope_factory("some", group="g", ui={"list_service": visible})
    token = token_for(member("pat", "g"))

    names, pages = walk(client, token, limit)

    assert names == [f"io.mcpgateway/{p[1:]}" for p in visible]
    assert pages == math.ceil(len(visible) / limit)  # a full last page carries no cursor either


def test_the_last_page_has_no_next_cursor_and_a_full_last_page_ends_the_walk(client, admin_token):
    for n in range(4):
        ServerFactory(path=f"/p{n}")

    first = get(client, "/v0.1/servers", admin_token, limit=2).json()
    second = get(client, "/v0.1/servers", admin_token, limit=2, cursor=first["metadata"]["nextCursor"]).json()

    assert first["metadata"]["count"] == 2
    assert [e["server"]["name"] for e in second["servers"]] == ["io.mcpgateway/p2", "io.mcpgateway/p3"]
    assert second["metadata"] == {"count": 2}


@pytest.mark.parametrize("cursor", ["garbage", "eyJ2IjoxfQ:abc:def", ""])
def test_an_unknown_cursor_is_400_never_a_restart(client, admin_token, cursor):
    ServerFactory(path="/a")

    response = get(client, "/v0.1/servers", admin_token, cursor=cursor)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "INVALID_PARAMETER"


def test_a_cursor_from_another_query_is_400(client, admin_token):
    for n in range(3):
        ServerFactory(path=f"/weather{n}")
    cursor = get(client, "/v0.1/servers", admin_token, limit=1).json()["metadata"]["nextCursor"]

    response = get(client, "/v0.1/servers", admin_token, limit=1, cursor=cursor, search="weather")

    assert response.status_code == 400
    assert "different query" in response.json()["error"]["message"]


def test_search_is_a_case_insensitive_substring_of_the_name_or_description(client, admin_token):
    ServerFactory(path="/weather")
    ServerFactory(path="/team/weather-eu")
    ServerFactory(path="/clock", description="The time in any time zone")

    def names(search):
        return [
            e["server"]["name"]
            for e in get(client, "/v0.1/servers", admin_token, search=search).json()["servers"]
        ]

    assert names("WEATH") == ["io.mcpgateway/team.weather-eu", "io.mcpgateway/weather"]
    assert names("team.weather") == ["io.mcpgateway/team.weather-eu"]
    assert names("io.mcpgateway/cl") == ["io.mcpgateway/clock"]
    assert names("nothing") == []
    assert names("TIME ZONE") == ["io.mcpgateway/clock"]


def test_updated_since_filters_and_bad_dates_are_400(client, admin_token):
    ServerFactory(path="/old")
    ServerFactory(path="/new")
    Server.objects.filter(path="/old").update(updated_at=timezone.now() - dt.timedelta(days=3))
    since = (timezone.now() - dt.timedelta(days=1)).isoformat()

    recent = get(client, "/v0.1/servers", admin_token, updated_since=since).json()
    naive = get(client, "/v0.1/servers", admin_token, updated_since="2026-01-01T00:00:00")
    bad = get(client, "/v0.1/servers", admin_token, updated_since="yesterday")

    assert [e["server"]["name"] for e in recent["servers"]] == ["io.mcpgateway/new"]
    assert naive.status_code == 400
    assert bad.status_code == 400
    assert bad.json()["error"]["code"] == "INVALID_PARAMETER"


def test_version_filter_latest_and_exact(client, admin_token):
    ServerFactory(path="/a", version="1.0.0")
    ServerFactory(path="/b", version="2.1.0")

    latest = get(client, "/v0.1/servers", admin_token, version="latest").json()
    exact = get(client, "/v0.1/servers", admin_token, version="2.1.0").json()

    assert latest["metadata"]["count"] == 2
    assert [e["server"]["name"] for e in exact["servers"]] == ["io.mcpgateway/b"]


def test_versions_of_one_server_with_a_url_encoded_name(client, admin_token):
    ServerFactory(path="/currenttime", version="1.2.0")
    name = quote("io.mcpgateway/currenttime", safe="")

    versions = get(client, f"/v0.1/servers/{name}/versions", admin_token)
    latest = get(client, f"/v0.1/servers/{name}/versions/latest", admin_token)
    own = get(client, f"/v0.1/servers/{name}/versions/1.2.0", admin_token)

    assert versions.status_code == 200
    validate_server_list(versions.json())
    assert versions.json()["metadata"] == {"count": 1}
    assert latest.status_code == 200
    validate_server_response(latest.json())
    assert latest.json() == own.json()
    assert latest.json() == versions.json()["servers"][0]


def test_multi_segment_paths_round_trip_through_the_name(client, admin_token):
    ServerFactory(path="/team/weather")

    response = get(
        client, f"/v0.1/servers/{quote('io.mcpgateway/team.weather', safe='')}/versions/latest", admin_token
    )

    assert response.status_code == 200
    assert response.json()["server"]["_meta"]["io.mcpgateway/internal"]["path"] == "/team/weather"


@pytest.mark.parametrize(
    "name",
    [
        "io.other/currenttime",
        "com.example/currenttime",
        "io.mcpgateway/unknown",
        "io.mcpgateway/",
        "io.mcpgateway/Current..Time",
        "currenttime",
    ],
)
def test_names_outside_the_namespace_or_unknown_are_404(client, admin_token, name):
    ServerFactory(path="/currenttime")

    response = get(client, f"/v0.1/servers/{quote(name, safe='')}/versions/latest", admin_token)

    assert response.status_code == 404
    assert response.json() == {"error": {"code": "NOT_FOUND", "message": "Server not found"}}


def test_a_server_the_caller_cannot_access_is_404_and_a_wrong_version_is_404(
    client, member, token_for, admin_token
):
    ServerFactory(path="/secret", version="1.0.0")
    name = quote("io.mcpgateway/secret", safe="")

    hidden = get(client, f"/v0.1/servers/{name}/versions/latest", token_for(member("eve")))
    wrong = get(client, f"/v0.1/servers/{name}/versions/9.9.9", admin_token)

    assert hidden.status_code == 404
    assert hidden.json()["error"]["code"] == "NOT_FOUND"
    assert wrong.status_code == 404
    assert wrong.json() == {"error": {"code": "NOT_FOUND", "message": "Server version not found"}}


def test_v0_serves_the_same_handlers(client, admin_token):
    ServerFactory(path="/a")

    assert get(client, "/v0/servers", admin_token).json() == get(client, "/v0.1/servers", admin_token).json()
    assert (
        get(
            client, f"/v0/servers/{quote('io.mcpgateway/a', safe='')}/versions/latest", admin_token
        ).status_code
        == 200
    )


def test_the_namespace_is_a_setting(client, admin_token, settings):
    settings.REGISTRY_NAMESPACE = "acme"
    ServerFactory(path="/a")

    body = get(client, "/v0.1/servers", admin_token).json()

    assert body["servers"][0]["server"]["name"] == "io.acme/a"
    assert "io.acme/internal" in body["servers"][0]["server"]["_meta"]


def test_listing_queries_do_not_grow_with_servers(client, admin_token, django_assert_max_num_queries):
    get(client, "/v0.1/servers", admin_token)  # the token's first use
    for n in range(5):
        ServerFactory(path=f"/q{n}")
    with django_assert_max_num_queries(20) as few:  # built, not kept: a server was just saved
        get(client, "/v0.1/servers", admin_token)
    for n in range(5, 60):
        ServerFactory(path=f"/q{n}")

    with django_assert_max_num_queries(len(few.captured_queries)):
        get(client, "/v0.1/servers", admin_token)


def test_an_admin_logs_in_generates_a_one_scope_token_and_lists_exactly_that_scopes_servers(
    client, member, scope_factory
):
    from tests.factories import PASSWORD

    for path in ("/one", "/two", "/three"):
        ServerFactory(path=path)
    scope_factory("one-and-three", group="mcp-registry-admin", ui={"list_service": ["one", "three"]})
    member("ada", "mcp-registry-admin")

    login = client.post("/api/auth/login", {"username": "ada", "password": PASSWORD})
    token = client.post(
        "/api/tokens/generate", {"requested_scopes": ["one-and-three"]}, content_type="application/json"
    ).json()["access_token"]
    client.logout()
    listed = get(client, "/v0.1/servers", token).json()

    assert login.status_code == 302
    assert [e["server"]["name"] for e in listed["servers"]] == ["io.mcpgateway/one", "io.mcpgateway/three"]
