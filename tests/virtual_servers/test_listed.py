"""Virtual servers where callers find servers: /v0.1 (valid against the official spec, merged in name
order with the servers, per the caller's rights, filtered and paged like them)."""

import pytest

from tests.factories import ServerFactory
from tests.servers.spec import validate_server_list
from virtual_servers.services import virtual_server_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def team():
    ServerFactory(path="/clock", name="Clock", health_status="healthy")
    ServerFactory(path="/zebra", name="Zebra", health_status="unhealthy")
    return virtual_server_create(
        actor=None,
        path="/team",
        definition={
            "name": "Team tools",
            "description": "What the team uses.",
            "members": [{"server": "/clock"}, {"server": "/zebra"}],
        },
    )


def names(body) -> list[str]:
    return [entry["server"]["name"] for entry in body["servers"]]


def test_a_virtual_server_is_listed_among_the_servers_with_its_gateway_url_as_remote(
    client, team, member, token_for
):
    token = token_for(member("ada", "mcp-registry-admin"))

    body = client.get("/v0.1/servers", headers={"Authorization": f"Bearer {token}"}).json()

    validate_server_list(body)
    assert names(body) == ["io.mcpgateway/clock", "io.mcpgateway/team", "io.mcpgateway/zebra"]
    entry = body["servers"][1]["server"]
    assert entry["remotes"] == [{"type": "streamable-http", "url": "http://testserver/team/mcp"}]
    assert (entry["title"], entry["description"], entry["version"]) == (
        "Team tools",
        "What the team uses.",
        "1.0.0",
    )
    assert entry["_meta"]["io.mcpgateway/internal"] == {
        "path": "/team",
        "is_enabled": True,
        "health_status": "degraded",
        "virtual": True,
        "members": ["/clock", "/zebra"],
    }


def test_a_caller_sees_a_virtual_server_only_when_a_rule_names_it(
    client, team, member, scope_factory, token_for
):
    scope_factory("clock", group="clock-users", server_rules=[{"server": "/clock", "methods": ["*"]}])
    scope_factory("team", group="team-users", server_rules=[{"server": "/team", "methods": ["*"]}])
    clock_only = token_for(member("cleo", "clock-users"))
    team_too = token_for(member("tess", "clock-users", "team-users"))

    seen = [
        names(client.get("/v0.1/servers", headers={"Authorization": f"Bearer {token}"}).json())
        for token in (clock_only, team_too)
    ]

    assert seen == [["io.mcpgateway/clock"], ["io.mcpgateway/clock", "io.mcpgateway/team"]]


def test_virtual_servers_are_paged_searched_and_filtered_like_servers(client, team, member, token_for):
    headers = {"Authorization": f"Bearer {token_for(member('ada', 'mcp-registry-admin'))}"}

    first = client.get("/v0.1/servers", {"limit": 1}, headers=headers).json()
    second = client.get(
        "/v0.1/servers", {"limit": 1, "cursor": first["metadata"]["nextCursor"]}, headers=headers
    ).json()
    searched = client.get("/v0.1/servers", {"search": "team uses"}, headers=headers).json()
    other_version = client.get("/v0.1/servers", {"version": "2.0.0"}, headers=headers).json()

    assert (names(first), names(second)) == (["io.mcpgateway/clock"], ["io.mcpgateway/team"])
    assert names(searched) == ["io.mcpgateway/team"]
    assert names(other_version) == []


def test_the_dashboard_shows_the_virtual_servers_a_caller_sees_with_their_url_health_and_members(
    client, team, member, scope_factory
):
    scope_factory("clock", group="clock-users", server_rules=[{"server": "/clock", "methods": ["*"]}])
    scope_factory("team", group="team-users", server_rules=[{"server": "/team", "methods": ["*"]}])
    client.force_login(member("tess", "clock-users", "team-users"))
    page = client.get("/").content.decode()
    searched = client.get("/", {"query": "clock"}).content.decode()
    client.force_login(member("cleo", "clock-users"))
    other = client.get("/").content.decode()

    section = page[page.index('<section class="virtual-servers"') :]
    assert '<code class="path">/team</code>' in section
    assert "MCP: <code>http://testserver/team/mcp</code>" in section
    assert '<span class="badge status-degraded" data-virtual-health>Degraded</span>' in section
    assert "<li><code>/clock</code></li><li><code>/zebra</code></li>" in section
    assert "&quot;url&quot;: &quot;http://testserver/team/mcp&quot;" in section
    assert 'class="virtual-servers"' not in searched  # the search text matches no virtual server
    assert 'class="virtual-servers"' not in other


def test_semantic_search_finds_a_virtual_server_by_what_it_is_for_only_for_those_who_see_it(
    client, member, scope_factory, token_for
):
    ServerFactory(path="/clock", name="Clock")
    virtual_server_create(
        actor=None,
        path="/weather-desk",
        definition={
            "name": "Weather desk",
            "description": "Forecasts, rain radar and storm warnings for the operations team.",
            "members": [{"server": "/clock"}],
        },
    )
    virtual_server_create(
        actor=None,
        path="/payroll",
        definition={
            "name": "Payroll",
            "description": "Salaries, invoices and expense reports for the finance team.",
            "members": [{"server": "/clock"}],
        },
    )
    rules = [{"server": "/weather-desk", "methods": ["*"]}, {"server": "/payroll", "methods": ["*"]}]
    scope_factory("desk", group="desk-users", server_rules=rules)
    sees = token_for(member("dana", "desk-users"))
    blind = token_for(member("bert"))

    def search(token):
        return client.post(
            "/api/search/semantic",
            {"query": "will it rain tomorrow", "entity_types": ["virtual_server"], "max_results": 5},
            content_type="application/json",
            headers={"Authorization": f"Bearer {token}"},
        ).json()

    found, hidden = search(sees), search(blind)

    hit = found["results"][0]
    assert (hit["entity_type"], hit["path"], hit["name"], hit["members"]) == (
        "virtual_server",
        "/weather-desk",
        "Weather desk",
        ["/clock"],
    )
    assert [result["path"] for result in found["results"]] == ["/weather-desk", "/payroll"]
    assert found["results"][0]["relevance_score"] > found["results"][1]["relevance_score"] + 0.1
    assert hidden["results"] == []
