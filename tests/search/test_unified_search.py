"""POST /api/search/semantic: servers, tools and agents in one ranking, each filtered for the caller before
the limit, on the real model and real pgvector."""

import pytest

from agents.choices import Visibility
from search.services import agents_embed, servers_embed, tools_embed
from servers.models import Server, Tool
from servers.services import server_create
from tests.factories import AgentFactory
from tests.search import semantic_fixtures

pytestmark = pytest.mark.django_db

embedding_model = semantic_fixtures.embedding_model

URL = "/api/search/semantic"


def search(client, body, token=None, **kwargs):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return client.post(URL, body, content_type="application/json", headers=headers, **kwargs)


def hits(response) -> list[tuple[str, str, str]]:
    return [(r["entity_type"], r["path"], r["name"]) for r in response.json()["results"]]


@pytest.fixture
def registry(db, embedding_model):
    """Three enabled servers with tools (one hidden from ordinary callers), a disabled one, and agents;
    registered through the services and embedded by the real embedding functions."""
    tools = {
        "/fx": (
            "Exchange Rates",
            "Foreign exchange market data",
            ["finance"],
            [
                ("convert_currency", "Convert an amount of money from one currency to another"),
                ("list_currencies", "List the ISO codes of supported currencies"),
            ],
        ),
        "/forecast": (
            "Forecast",
            "Weather data for any place",
            ["weather"],
            [("get_forecast", "Hourly temperature and rain forecast for a city")],
        ),
        "/secret-fx": (
            "Treasury Desk",
            "Internal currency trading",
            ["finance"],
            [("convert_currency_internal", "Convert money between currencies at treasury rates")],
        ),
        "/old-fx": (
            "Old Exchange",
            "Retired currency service",
            ["finance"],
            [("convert_currency_legacy", "Convert currency amounts (legacy)")],
        ),
    }
    for path, (name, description, tags, tool_list) in tools.items():
        server_create(
            actor=None,
            path=path,
            name=name,
            description=description,
            tags=tags,
            proxy_pass_url=f"http://127.0.0.1:9{len(path)}/mcp",
            is_enabled=path != "/old-fx",
            tools=[{"name": n, "description": d, "input_schema": {}} for n, d in tool_list],
        )
    AgentFactory(
        path="/currency-agent",
        name="Currency Agent",
        description="Converts money between currencies",
        is_enabled=True,
    )
    AgentFactory(
        path="/private-currency-agent",
        name="Private Currency Agent",
        description="Converts money between currencies",
        visibility=Visibility.PRIVATE,
        is_enabled=True,
    )
    AgentFactory(path="/poet", name="Poet", description="Writes poems about the sea", is_enabled=True)
    assert (servers_embed(), tools_embed(), agents_embed()) == (4, 5, 3)


@pytest.fixture
def analyst(member, scope_factory, token_for):
    """Sees /fx, /forecast and /old-fx, not /secret-fx."""
    scope_factory("analysts", group="analysts", ui={"list_service": ["/fx", "/forecast", "/old-fx"]})
    return token_for(member("ana", "analysts"))


def test_convert_currency_finds_the_tool_by_its_description_and_its_server(client, registry, analyst):
    response = search(client, {"query": "convert currency", "max_results": 4}, analyst)

    assert response.status_code == 200
    assert hits(response)[:2] == [
        ("tool", "/fx", "convert_currency"),
        ("a2a_agent", "/currency-agent", "Currency Agent"),
    ]
    assert ("mcp_server", "/fx", "Exchange Rates") in hits(response)


def test_each_entity_type_has_exactly_its_shape(client, registry, analyst):
    response = search(client, {"query": "convert currency", "max_results": 100}, analyst)

    first = {}
    for result in response.json()["results"]:
        first.setdefault(result["entity_type"], result)
    scores = {kind: result.pop("relevance_score") for kind, result in first.items()}
    assert first == {
        "tool": {
            "entity_type": "tool",
            "path": "/fx",
            "name": "convert_currency",
            "description": "Convert an amount of money from one currency to another",
            "server_path": "/fx",
            "server_name": "Exchange Rates",
        },
        "mcp_server": {
            "entity_type": "mcp_server",
            "path": "/fx",
            "name": "Exchange Rates",
            "description": "Foreign exchange market data",
            "tags": ["finance"],
        },
        "a2a_agent": {
            "entity_type": "a2a_agent",
            "path": "/currency-agent",
            "name": "Currency Agent",
            "description": "Converts money between currencies",
            "tags": [],
        },
    }
    assert all(0.0 <= score <= 1.0 for score in scores.values())


def test_results_are_ranked_best_first_across_types(client, registry, analyst):
    results = search(client, {"query": "rain tomorrow", "max_results": 100}, analyst).json()["results"]

    scores = [r["relevance_score"] for r in results]
    assert scores == sorted(scores, reverse=True)
    assert (results[0]["entity_type"], results[0]["name"]) == ("tool", "get_forecast")


def test_entity_types_limits_the_search(client, registry, analyst):
    tools_only = search(client, {"query": "convert currency", "entity_types": ["tool"]}, analyst)
    servers_only = search(client, {"query": "weather", "entity_types": ["mcp_server"]}, analyst)

    assert {kind for kind, _, _ in hits(tools_only)} == {"tool"}
    assert hits(tools_only)[0] == ("tool", "/fx", "convert_currency")
    assert hits(servers_only) == [
        ("mcp_server", "/forecast", "Forecast"),
        ("mcp_server", "/fx", "Exchange Rates"),
    ]


@pytest.mark.parametrize(
    ("who", "servers", "agents"),
    [
        ("anonymous", set(), {"/currency-agent", "/poet"}),
        ("analyst", {"/fx", "/forecast"}, {"/currency-agent", "/poet"}),
        (
            "admin",
            {"/fx", "/forecast", "/secret-fx"},
            {"/currency-agent", "/poet", "/private-currency-agent"},
        ),
    ],
)
def test_callers_find_only_enabled_servers_tools_and_agents_they_may_see(
    client, registry, analyst, member, token_for, who, servers, agents
):
    tokens = {"analyst": lambda: analyst, "admin": lambda: token_for(member("ada", "mcp-registry-admin"))}
    token = tokens[who]() if who in tokens else None

    results = search(client, {"query": "convert currency", "max_results": 100}, token).json()["results"]

    assert {r["path"] for r in results if r["entity_type"] == "mcp_server"} == servers
    assert {r["server_path"] for r in results if r["entity_type"] == "tool"} == servers
    assert {r["path"] for r in results if r["entity_type"] == "a2a_agent"} == agents


def test_hidden_tools_do_not_use_up_the_limit(client, db, embedding_model, analyst):
    """A hidden server's 40 currency tools are nearer than any visible tool; 10 visible still come back."""
    server_create(
        actor=None,
        path="/secret-fx",
        name="Treasury",
        description="Internal",
        proxy_pass_url="http://127.0.0.1:9001/mcp",
        is_enabled=True,
        tools=[{"name": f"convert_currency_{n}", "description": "Convert currency"} for n in range(40)],
    )
    server_create(
        actor=None,
        path="/fx",
        name="Finance",
        description="Finance tools",
        proxy_pass_url="http://127.0.0.1:9002/mcp",
        is_enabled=True,
        tools=[{"name": f"finance_tool_{n}", "description": f"Finance report number {n}"} for n in range(12)],
    )
    tools_embed()

    response = search(
        client, {"query": "convert currency", "entity_types": ["tool"], "max_results": 10}, analyst
    )

    assert [r["server_path"] for r in response.json()["results"]] == ["/fx"] * 10


def test_servers_and_tools_become_searchable_when_embedded(client, db, embedding_model, analyst):
    server = server_create(
        actor=None,
        path="/fx",
        name="Exchange Rates",
        description="FX data",
        proxy_pass_url="http://127.0.0.1:9003/mcp",
        is_enabled=True,
        tools=[{"name": "convert_currency", "description": "Convert money"}],
    )

    before = hits(search(client, {"query": "convert currency"}, analyst))
    embedded = (servers_embed([server.pk]), tools_embed(server_ids=[server.pk]))
    after = hits(search(client, {"query": "convert currency"}, analyst))

    assert (before, embedded) == ([], (1, 1))
    assert sorted(after) == [("mcp_server", "/fx", "Exchange Rates"), ("tool", "/fx", "convert_currency")]
    assert (
        Server.objects.filter(embedding_dirty=True).count()
        == Tool.objects.filter(embedding_dirty=True).count()
        == 0
    )


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "  "}, "query"),
        ({"max_results": 5}, "query"),
        ({"query": "x", "entity_types": []}, "entity_types"),
        ({"query": "x", "entity_types": ["mcp_server", "prompt"]}, "entity_types"),
        ({"query": "x", "entity_types": "tool"}, "entity_types"),
        ({"query": "x", "max_results": 0}, "max_results"),
        ({"query": "x", "max_results": 101}, "max_results"),
    ],
)
def test_a_bad_request_is_a_400_naming_the_field(client, body, field):
    response = search(client, body)

    assert response.status_code == 400
    assert (response.json()["error_code"], list(response.json()["errors"])) == ("validation_error", [field])


def test_only_json_is_accepted(client):
    response = client.post(URL, {"query": "weather"})  # a form post

    assert response.status_code == 415, response.content
    assert response.json()["error_code"] == "unsupported_media_type"


def test_an_embedding_failure_is_a_500_search_error(client, settings, free_port):
    settings.EMBEDDINGS_PROVIDER = "openai"
    settings.EMBEDDINGS_API_URL = f"http://127.0.0.1:{free_port}/v1"  # a closed loopback port

    response = search(client, {"query": "convert currency"})

    assert response.status_code == 500
    body = response.json()
    assert body == {
        "detail": "Semantic search is unavailable: the query could not be embedded. Try again later.",
        "error_code": "SEARCH_ERROR",
        "request_id": response["X-Request-ID"],
    }


def test_skills_are_found_by_meaning_among_the_rest_and_only_where_the_caller_may_see_them(
    client, registry, analyst, member, token_for
):
    from search.services import skills_embed
    from skills.archives import read_folder
    from skills.models import Skill
    from skills.services import skill_version_publish

    def published(name: str, description: str, visibility: str, owner):
        front = f"---\nname: {name}\ndescription: {description}\n---\n\nSteps.\n".encode()
        return skill_version_publish(
            actor=owner, read=read_folder({"SKILL.md": front}, name), visibility=visibility
        )

    from accounts.principal import principal_for_user

    owner = principal_for_user(member("olga", "nobody"), auth_method="session")
    published(
        "currency-conversion", "Convert amounts of money between currencies by today's rate.", "public", owner
    )
    published("treasury-notes", "Convert money at the treasury's internal currency rates.", "private", owner)
    assert Skill.objects.filter(embedding_dirty=True).count() == 2
    skills_embed()

    found = search(client, {"query": "convert money between currencies", "entity_types": ["skill"]}, analyst)
    mixed = search(client, {"query": "convert money between currencies"}, analyst)

    assert hits(found) == [("skill", "/currency-conversion", "currency-conversion")]
    assert (
        found.json()["results"][0]["description"]
        == "Convert amounts of money between currencies by today's rate."
    )
    assert ("skill", "/currency-conversion", "currency-conversion") in hits(mixed)
    assert Skill.objects.filter(embedding_dirty=True).count() == 0
