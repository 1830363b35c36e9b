"""Agents store 384-dimension vectors in pgvector and order by cosine distance in PostgreSQL."""

import math

import pytest
from pgvector.django import CosineDistance

from agents.models import EMBEDDING_DIMENSIONS, Agent
from tests.factories import AgentFactory

pytestmark = pytest.mark.django_db


def unit(*weights: float) -> list[float]:
    vector = list(weights) + [0.0] * (EMBEDDING_DIMENSIONS - len(weights))
    norm = math.sqrt(sum(value * value for value in vector))
    return [value / norm for value in vector]


def test_agents_order_by_cosine_distance_through_pgvector():
    from django.db import connection

    # Exact distances, not the HNSW index: earlier tests' rolled-back rows stay in the index until a
    # vacuum, and an index scan yields at most `hnsw.ef_search` candidates, dead ones included.
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_indexscan = off")
    AgentFactory(path="/far", embedding=unit(0, 1))
    AgentFactory(path="/near", embedding=unit(1, 0.1))
    AgentFactory(path="/middle", embedding=unit(1, 1))
    AgentFactory(path="/unembedded", embedding=None)

    ranked = list(
        Agent.objects.exclude(embedding=None)
        .annotate(distance=CosineDistance("embedding", unit(1, 0)))
        .order_by("distance")
        .values_list("path", "distance")
    )

    assert [path for path, _ in ranked] == ["/near", "/middle", "/far"]
    assert ranked[0][1] == pytest.approx(1 - 1 / math.sqrt(1.01), abs=1e-6)
    assert ranked[1][1] == pytest.approx(1 - 1 / math.sqrt(2), abs=1e-6)
    assert ranked[2][1] == pytest.approx(1.0, abs=1e-6)


def test_the_embedding_column_has_an_hnsw_cosine_index():
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'agent_embedding_hnsw'")
        (indexdef,) = cursor.fetchone()

    assert "USING hnsw (embedding vector_cosine_ops)" in indexdef


def test_a_new_agent_is_disabled_dirty_and_counts_its_skills():
    agent = AgentFactory(skills=[{"name": "a"}, {"name": "b"}])

    assert agent.is_enabled is False
    assert agent.embedding_dirty is True
    assert agent.num_skills == 2
