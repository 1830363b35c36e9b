"""POST /api/agents/discover/semantic on the real model and real pgvector: ranking, scores, visibility,
filtering before the limit, and the refresh of embeddings."""

import threading

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import User
from agents import services
from agents.choices import Visibility
from agents.models import Agent
from core import embeddings
from search.services import agents_embed
from search.texts import agent_text
from tests.factories import AgentFactory
from tests.search import semantic_fixtures
from tests.search.semantic_fixtures import QUERIES

pytestmark = pytest.mark.django_db

embedding_model = semantic_fixtures.embedding_model
agent_corpus = semantic_fixtures.agent_corpus

URL = "/api/agents/discover/semantic"


def search(client, query, token=None, **params):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return client.post(f"{URL}?{_qs(query=query, **params)}", headers=headers)


def _qs(**params) -> str:
    from urllib.parse import urlencode

    return urlencode({k: v for k, v in params.items() if v is not None})


def paths(response) -> list[str]:
    return [agent["path"] for agent in response.json()["agents"]]


def test_each_query_finds_its_agent_first(client, agent_corpus):
    firsts = {query: paths(search(client, query, max_results=1)) for query, _ in QUERIES}

    assert firsts == {query: [expected] for query, expected in QUERIES}


def test_an_answer_has_exactly_the_interface_shape(client, embedding_model):
    AgentFactory(path="/fx", name="FX", description="Converts currencies", is_enabled=True)
    agents_embed()

    response = search(client, "convert 100 dollars to euros")

    assert response.status_code == 200
    [agent] = response.json()["agents"]
    assert set(response.json()) == {"agents"}
    assert agent == {
        "path": "/fx",
        "name": "FX",
        "relevance_score": agent["relevance_score"],
        "description": "Converts currencies",
    }
    assert isinstance(agent["relevance_score"], float)


def test_scores_are_cosine_similarities_in_0_1_best_first_and_better_matches_score_higher(
    client, agent_corpus, embedding_model
):
    query = "convert 100 dollars to euros"

    agents = search(client, query, max_results=100).json()["agents"]
    off_topic = search(client, "will it rain in Paris tomorrow", max_results=100).json()["agents"]

    scores = [agent["relevance_score"] for agent in agents]
    assert len(agents) == len(agent_corpus)
    assert all(0.0 <= score <= 1.0 for score in scores)
    assert scores == sorted(scores, reverse=True)
    vector = np.array(embedding_model.embed([query])[0])
    stored = {a.path: np.array(a.embedding) for a in Agent.objects.all()}
    expected = {path: float(np.clip(vector @ v, 0, 1)) for path, v in stored.items()}
    assert {a["path"]: a["relevance_score"] for a in agents} == pytest.approx(expected, abs=1e-5)
    currency = {a["path"]: a["relevance_score"] for a in off_topic}["/currency-converter"]
    assert scores[0] > 0.5 > currency


def test_max_results_defaults_to_10_and_limits_the_answer(client, agent_corpus):
    assert len(paths(search(client, "help me"))) == 10
    assert len(paths(search(client, "help me", max_results=3))) == 3
    assert len(paths(search(client, "help me", max_results=100))) == len(agent_corpus)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({}, "query"),
        ({"query": "x" * 1001}, "query"),
        ({"query": "weather", "max_results": 0}, "max_results"),
        ({"query": "weather", "max_results": 101}, "max_results"),
        ({"query": "weather", "max_results": "ten"}, "max_results"),
    ],
)
def test_an_empty_query_or_a_bad_max_results_is_a_400(client, params, field):
    response = client.post(f"{URL}?{_qs(**params)}")

    assert response.status_code == 400
    body = response.json()
    assert (body["error_code"], list(body["errors"])) == ("validation_error", [field])
    assert set(body) == {"detail", "error_code", "request_id", "errors"}


def test_a_bad_bearer_token_is_a_401_not_an_anonymous_search(client):
    response = search(client, "weather", token="not-a-jwt")

    assert response.status_code == 401
    assert response.json()["error_code"] == "token_malformed"


# -- visibility ----------------------------------------------------------------------------------------


@pytest.fixture
def visibility_agents(db, member, embedding_model):
    """Five currency agents that differ only in who may see them, embedded."""
    alice = member("alice", "team")
    shapes = {
        "/fx-public": (Visibility.PUBLIC, True),
        "/fx-disabled": (Visibility.PUBLIC, False),
        "/fx-private": (Visibility.PRIVATE, True),
        "/fx-internal": (Visibility.INTERNAL, True),
        "/fx-internal-other": (Visibility.INTERNAL, True),
    }
    for path, (visibility, enabled) in shapes.items():
        AgentFactory(
            path=path,
            name=f"Currency converter {path}",
            description="Converts money between currencies",
            visibility=visibility,
            is_enabled=enabled,
            owner=alice if path != "/fx-internal-other" else member("olga", "elsewhere"),
        )
    agents_embed()


@pytest.mark.parametrize(
    ("who", "expected"),
    [
        ("anonymous", ["/fx-public"]),
        ("stranger", ["/fx-public"]),
        ("member", ["/fx-internal", "/fx-public"]),
        ("owner", ["/fx-internal", "/fx-private", "/fx-public"]),
        ("admin", ["/fx-internal", "/fx-internal-other", "/fx-private", "/fx-public"]),
    ],
)
def test_private_internal_and_disabled_agents_never_leak(
    client, visibility_agents, member, token_for, who, expected
):
    users = {
        "stranger": lambda: member("sam"),
        "member": lambda: member("mia", "team"),
        "owner": lambda: User.objects.get(username="alice"),
        "admin": lambda: member("ada", "mcp-registry-admin"),
    }
    token = token_for(users[who]()) if who in users else None

    response = search(client, "currency converter", token=token, max_results=100)

    assert response.status_code == 200
    assert sorted(paths(response)) == expected


def test_a_session_is_accepted_as_well_as_a_token(client, visibility_agents, member):
    client.force_login(User.objects.get(username="alice"))

    response = search(client, "currency converter")

    assert sorted(paths(response)) == ["/fx-internal", "/fx-private", "/fx-public"]


# -- filtering before the limit --------------------------------------------------------------------------


@pytest.fixture
def crowded(db, member, embedding_model):
    """120 private currency agents nearer to the query than any of the 12 public ones: more than the
    100 candidates the HNSW index hands to the filter at least."""
    owner = member("hoarder")
    for n in range(120):
        AgentFactory(
            path=f"/private-fx-{n:03d}",
            name=f"Currency converter {n}",
            description=f"Converts dollars to euros and other currencies, desk {n}",
            visibility=Visibility.PRIVATE,
            is_enabled=True,
            owner=owner,
        )
    for n, topic in enumerate(
        [
            "bank account balances",
            "stock prices",
            "tax returns",
            "crypto wallets",
            "invoices",
            "budgets",
            "loan interest",
            "insurance quotes",
            "payroll",
            "expense reports",
            "pension plans",
            "credit scores",
        ]
    ):
        AgentFactory(
            path=f"/public-{n:02d}",
            name=f"Finance helper {n}",
            description=f"Answers questions about {topic}",
            visibility=Visibility.PUBLIC,
            is_enabled=True,
        )
    agents_embed()


def exact_top(query_vector, limit, **filters) -> list[str]:
    """The true nearest agents by cosine distance, computed here from the stored vectors."""
    rows = Agent.objects.filter(embedding__isnull=False, **filters)
    distances = {a.path: 1 - float(np.array(a.embedding) @ query_vector) for a in rows}
    return sorted(distances, key=distances.get)[:limit]


def test_hidden_agents_do_not_use_up_the_limit(client, crowded, embedding_model):
    query = "convert dollars to euros"
    vector = np.array(embedding_model.embed([query])[0])

    response = search(client, query, max_results=10)

    assert paths(response) == exact_top(vector, 10, visibility=Visibility.PUBLIC)


def test_hidden_agents_do_not_use_up_the_limit_when_the_hnsw_index_serves_the_query(
    client, crowded, embedding_model
):
    """Steer the planner onto the index (as it chooses by itself on large tables): the index hands its
    ef_search candidates to the filter, the answer comes up short, and the exact query completes it."""
    query = "convert dollars to euros"
    vector = np.array(embedding_model.embed([query])[0])
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_sort = off")  # the index is the one plan without a sort

    with CaptureQueriesContext(connection) as queries:
        response = search(client, query, max_results=10)

    assert paths(response) == exact_top(vector, 10, visibility=Visibility.PUBLIC)
    searches = [q["sql"] for q in queries.captured_queries if "<=>" in q["sql"]]
    assert len(searches) == 2  # the index's short answer, then the exact one
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {searches[0]}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "agent_embedding_hnsw" in plan


def test_agents_without_an_embedding_are_not_returned(client, embedding_model):
    AgentFactory(path="/fresh", name="Weather", description="Weather forecasts", is_enabled=True)

    before = paths(search(client, "weather forecast"))
    agents_embed()
    after = paths(search(client, "weather forecast"))

    assert (before, after) == ([], ["/fresh"])


# -- refreshing embeddings --------------------------------------------------------------------------------


def test_an_edited_agent_is_found_by_its_new_text_after_the_embedding_runs(client, agent_corpus):
    agent = agent_corpus["/music-recommender"]
    services.agent_update(
        actor=None, agent=agent, name="Parking Finder", description="Finds free parking spaces near you"
    )

    stale = paths(search(client, "find a parking space downtown"))[0]
    embedded = agents_embed()
    fresh = paths(search(client, "find a parking space downtown"))[0]

    assert (stale, embedded, fresh) == ("/maps", 1, "/music-recommender")
    assert Agent.objects.embedding_dirty().count() == 0


def test_embedding_twice_is_harmless(agent_corpus):
    before = dict(Agent.objects.values_list("path", "embedding"))

    assert agents_embed() == 0
    assert agents_embed([a.pk for a in agent_corpus.values()]) == 0
    assert {p: list(v) for p, v in Agent.objects.values_list("path", "embedding")} == {
        p: list(v) for p, v in before.items()
    }


def test_a_sweep_already_running_elsewhere_is_skipped(embedding_model):
    from django.core.cache import cache

    AgentFactory(path="/waiting")
    cache.add("embeddings:sweep:agents", "1", timeout=60)

    assert agents_embed() == 0
    assert agents_embed([Agent.objects.get().pk]) == 1  # targeted runs do not wait for the sweep


class EditingProvider:
    """The real provider; while it embeds, another connection edits an agent (a real concurrent write)."""

    def __init__(self, path: str):
        self.path, self.real = path, embeddings.LocalProvider()

    def embed(self, texts):
        def edit():
            try:
                agent = Agent.objects.get(path=self.path)
                services.agent_update(actor=None, agent=agent, description="Now books restaurant tables")
            finally:
                connection.close()

        vectors = self.real.embed(texts)
        thread = threading.Thread(target=edit)
        thread.start()
        thread.join()
        return vectors


@pytest.mark.django_db(transaction=True)
def test_an_agent_edited_while_it_was_embedded_stays_dirty(embedding_model, monkeypatch, settings):
    settings.EMBEDDINGS_IN_REQUEST = False  # the edit's embedding goes to the worker: the race is the point
    edited = AgentFactory(path="/edited", description="Plans trips")
    other = AgentFactory(path="/other", description="Plans meals")
    monkeypatch.setattr(embeddings, "get_provider", lambda: EditingProvider("/edited"))

    stored = agents_embed()

    edited.refresh_from_db()
    other.refresh_from_db()
    assert stored == 1
    assert (edited.embedding_dirty, edited.embedding, edited.description) == (
        True,
        None,
        "Now books restaurant tables",
    )
    assert (other.embedding_dirty, other.embedding is not None) == (False, True)
    monkeypatch.undo()
    assert agents_embed() == 1
    edited.refresh_from_db()
    assert edited.embedding_dirty is False
    assert np.allclose(edited.embedding, embedding_model.embed([agent_text(edited)])[0], atol=1e-6)


# -- failures ----------------------------------------------------------------------------------------------


def test_an_embedding_failure_is_a_500_search_error(client, settings, free_port):
    settings.EMBEDDINGS_PROVIDER = "openai"
    settings.EMBEDDINGS_API_URL = f"http://127.0.0.1:{free_port}/v1"  # nothing listens there

    response = search(client, "weather")

    assert response.status_code == 500
    body = response.json()
    assert set(body) == {"detail", "error_code", "request_id"}
    assert (body["error_code"], body["request_id"]) == ("SEARCH_ERROR", response["X-Request-ID"])
    assert "127.0.0.1" not in body["detail"]


def test_searches_are_rate_limited_per_caller_with_headers(client, embedding_model, settings):
    settings.SEMANTIC_SEARCH_RATE_PER_MINUTE = 2

    first = client.post(URL + "?query=weather")
    client.post(URL + "?query=weather")
    refused = client.post(URL + "?query=weather")

    assert first.status_code == 200
    assert (first["X-RateLimit-Limit"], first["X-RateLimit-Remaining"]) == ("2", "1")
    assert refused.status_code == 429
    assert refused.json()["error_code"] == "throttled"
    assert int(refused["Retry-After"]) >= 1
