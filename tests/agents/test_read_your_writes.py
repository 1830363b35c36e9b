"""A write embeds its own row before it answers when the local model is loaded in the process, so the
very next request finds a new agent, server or tool by meaning; without the model here it goes to the
worker."""

import pytest
from django.test import Client

from agents.models import Agent
from servers.models import Server, Tool
from tests.search import semantic_fixtures

pytestmark = pytest.mark.django_db(transaction=True)  # embedding follows the commit

embedding_model = semantic_fixtures.embedding_model

CARD = {
    "name": "Tide Tables",
    "description": "Predicts high and low tide times for any harbour",
    "url": "https://agents.example.test/tides",
    "version": "1.0.0",
    "path": "/tides",
    "visibility": "public",
    "skills": [{"id": "tides", "name": "tide_times", "description": "When the tide is high or low"}],
}


@pytest.fixture
def publisher(member, scope_factory, token_for):
    scope_factory(
        "publishers",
        group="publishers",
        ui={"publish_agent": ["all"], "toggle_agent": ["all"], "list_service": ["all"]},
    )
    return token_for(member("pat", "publishers"))


def test_a_registered_agent_is_found_by_the_very_next_search(embedding_model, publisher, settings):
    client = Client(headers={"Authorization": f"Bearer {publisher}"})

    registered = client.post("/api/agents/register", CARD, content_type="application/json")
    enabled = client.post("/api/agents/tides/toggle?enabled=true")
    found = client.post("/api/agents/discover/semantic?query=when+is+high+tide+in+the+harbour&max_results=3")

    assert (registered.status_code, enabled.status_code, found.status_code) == (201, 200, 200)
    assert found.json()["agents"][0]["path"] == "/tides"
    assert Agent.objects.get().embedding_dirty is False


def test_a_registered_server_and_its_tools_are_found_by_the_very_next_search(
    embedding_model, publisher, settings
):
    settings.ADMIN_PASSWORD = "ops-password"
    import base64

    basic = base64.b64encode(f"{settings.ADMIN_USER}:ops-password".encode()).decode()
    admin = Client(headers={"Authorization": f"Basic {basic}"})
    tools = '[{"name": "tide_forecast", "description": "High and low water times for a harbour"}]'

    registered = admin.post(
        "/api/internal/register",
        {
            "name": "Harbour Data",
            "description": "Tides and moorings of every harbour",
            "path": "/harbour",
            "proxy_pass_url": "http://127.0.0.1:9/mcp",
            "tool_list_json": tools,
        },
    )
    client = Client(headers={"Authorization": f"Bearer {publisher}"})
    found = client.post(
        "/api/search/semantic",
        {"query": "high water times in the harbour", "max_results": 2},
        content_type="application/json",
    )

    assert registered.status_code == 201
    assert [(hit["entity_type"], hit["name"]) for hit in found.json()["results"]] == [
        ("tool", "tide_forecast"),
        ("mcp_server", "Harbour Data"),
    ]
    assert (Server.objects.get().embedding_dirty, Tool.objects.get().embedding_dirty) == (False, False)


def test_without_in_request_embedding_the_write_leaves_the_row_to_the_worker(
    embedding_model, publisher, settings
):
    settings.EMBEDDINGS_IN_REQUEST = False
    client = Client(headers={"Authorization": f"Bearer {publisher}"})

    client.post("/api/agents/register", CARD, content_type="application/json")

    assert Agent.objects.get().embedding_dirty is True
