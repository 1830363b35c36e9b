"""A caller whose tool rules allow some tools of a server is shown only those, on every surface: the
gateway's tools/list, the dashboard's count, the tools and details APIs, the health snapshot and search."""

import pytest

from accounts.choices import AuthMethod
from accounts.principal import Principal, principal_for_user
from gateway.messages import filter_answer
from search.services import servers_embed, tools_embed
from servers.models import Tool
from servers.services import server_create
from tests.search import semantic_fixtures

embedding_model = semantic_fixtures.embedding_model

NOTES_TOOLS = [
    ("read_note", "Read one note by its id"),
    ("list_notes", "List the titles of every note"),
    ("delete_note", "Delete a note for ever"),
]


@pytest.fixture
def notes(db):
    return server_create(
        actor=None,
        path="/notes",
        name="Notes",
        description="A notebook",
        proxy_pass_url="http://127.0.0.1:9/mcp",
        is_enabled=True,
        tools=[{"name": name, "description": text, "input_schema": {}} for name, text in NOTES_TOOLS],
    )


@pytest.fixture
def weather(db):
    return server_create(
        actor=None,
        path="/weather",
        name="Weather",
        description="Forecasts",
        proxy_pass_url="http://127.0.0.1:10/mcp",
        is_enabled=True,
        tools=[{"name": "get_forecast", "description": "Rain and sun", "input_schema": {}}],
    )


@pytest.fixture
def reader(member, scope_factory):
    """May call read_note and list_notes on /notes, and sees /weather with no tool rule on it."""
    scope_factory(
        "notes-readers",
        group="note-readers",
        server_rules=[
            {
                "server": "/notes",
                "methods": ["initialize", "tools/list", "tools/call"],
                "tools": ["read_note", "list_notes"],
            }
        ],
        ui={"list_service": ["/notes", "/weather"]},
    )
    return member("rita", "note-readers")


@pytest.fixture
def as_reader(client, reader):
    client.force_login(reader)
    return client


def test_shown_tools_follow_the_tool_rules_that_reach_the_server(reader):
    principal = principal_for_user(reader, auth_method=AuthMethod.SESSION)

    assert principal.shown_tools("/notes") == frozenset({"read_note", "list_notes"})
    assert principal.shown_tools("/weather") is None  # no tool rule reaches it: the catalogue view
    assert Principal(username="root", auth_method=None, is_admin=True).shown_tools("/notes") is None


def test_a_rule_on_every_server_narrows_every_server(member, scope_factory, notes, weather):
    scope_factory(
        "everywhere",
        group="g",
        server_rules=[{"server": "*", "methods": ["tools/call"], "tools": ["read_note", "get_forecast"]}],
    )
    principal = principal_for_user(member("gus", "g"), auth_method=AuthMethod.SESSION)

    shown = Tool.objects.visible_to(principal).values_list("server__path", "name")
    assert sorted(shown) == [("/notes", "read_note"), ("/weather", "get_forecast")]


def test_the_tools_shown_are_those_the_gateway_lists(reader, notes, weather):
    principal = principal_for_user(reader, auth_method=AuthMethod.SESSION)
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": n} for n, _ in NOTES_TOOLS]}}

    gateway_lists = [tool["name"] for tool in filter_answer(answer, principal, "/notes")["result"]["tools"]]
    shown = Tool.objects.visible_to(principal).filter(server=notes).values_list("name", flat=True)

    assert sorted(gateway_lists) == sorted(shown) == ["list_notes", "read_note"]


def test_the_dashboard_counts_only_the_tools_shown(as_reader, notes, weather):
    page = as_reader.get("/").content.decode()

    notes_row = page[page.index('<code class="path">/notes</code>') :]
    weather_row = page[page.index('<code class="path">/weather</code>') :]
    assert notes_row.index('<td class="num" data-num-tools>2</td>') < notes_row.index("</tr>")
    assert weather_row.index('<td class="num" data-num-tools>1</td>') < weather_row.index("</tr>")


def test_the_tools_api_lists_only_the_tools_shown(as_reader, notes, weather):
    one = as_reader.get("/api/tools/notes").json()["tools"]
    every = as_reader.get("/api/tools/all").json()["tools"]

    assert [tool["name"] for tool in one] == ["list_notes", "read_note"]
    assert [(tool["server_path"], tool["name"]) for tool in every] == [
        ("/notes", "list_notes"),
        ("/notes", "read_note"),
        ("/weather", "get_forecast"),
    ]


def test_the_details_show_only_the_tools_shown_and_their_count(as_reader, notes, weather):
    one = as_reader.get("/api/server_details/notes").json()
    every = {entry["path"]: entry for entry in as_reader.get("/api/server_details/all").json()["servers"]}

    assert (one["num_tools"], [tool["name"] for tool in one["tools"]]) == (2, ["list_notes", "read_note"])
    assert every["/notes"]["num_tools"] == 2
    assert [tool["name"] for tool in every["/notes"]["tools"]] == ["list_notes", "read_note"]
    assert every["/weather"]["num_tools"] == 1


def test_the_health_snapshot_counts_only_the_tools_shown(as_reader, admin_client, notes, weather):
    mine = as_reader.get("/api/health/ws/health_status").json()
    everything = admin_client.get("/api/health/ws/health_status").json()

    assert (mine["/notes"]["num_tools"], mine["/weather"]["num_tools"]) == (2, 1)
    assert everything["/notes"]["num_tools"] == 3


def test_search_never_finds_a_tool_the_caller_may_not_call(
    client, reader, admin_user, token_for, notes, weather, embedding_model
):
    assert (servers_embed(), tools_embed()) == (2, 4)
    body = {"query": "delete a note", "entity_types": ["tool"], "max_results": 10}

    def found(user):
        headers = {"Authorization": f"Bearer {token_for(user)}"}
        response = client.post("/api/search/semantic", body, content_type="application/json", headers=headers)
        return [result["name"] for result in response.json()["results"]]

    assert found(admin_user)[0] == "delete_note"
    assert sorted(found(reader)) == ["get_forecast", "list_notes", "read_note"]


def test_v01_counts_only_the_tools_shown_and_shares_no_cached_page(as_reader, admin_client, notes, weather):
    def counts(client, url):
        answer = client.get(url)
        assert answer.status_code == 200, answer.content
        return {
            entry["server"]["name"]: entry["server"]["_meta"]["io.mcpgateway/internal"]["num_tools"]
            for entry in answer.json()["servers"]
        }

    admin_first = counts(admin_client, "/v0.1/servers")  # fills the page cache for the admin's view
    listed = counts(as_reader, "/v0.1/servers")
    versions = counts(as_reader, "/v0.1/servers/io.mcpgateway%2Fnotes/versions")
    latest = as_reader.get("/v0.1/servers/io.mcpgateway%2Fnotes/versions/latest").json()

    assert admin_first == {"io.mcpgateway/notes": 3, "io.mcpgateway/weather": 1}
    assert listed == {"io.mcpgateway/notes": 2, "io.mcpgateway/weather": 1}
    assert versions == {"io.mcpgateway/notes": 2}
    assert latest["server"]["_meta"]["io.mcpgateway/internal"]["num_tools"] == 2
    assert counts(admin_client, "/v0.1/servers") == admin_first
