"""Semantic search reads: agents, and agents, servers, tools, skills and catalog entries together, nearest
to a query first.

Ranking: the query is embedded by the configured provider and compared with the stored vectors by
cosine distance in SQL (pgvector's `<=>`); `relevance_score` is the cosine similarity, 1 − distance,
clipped to [0, 1], so higher is better.

Filtering comes before the limit. Visibility and `is_enabled` are WHERE clauses of the same query that
orders by distance, so a caller who asks for 10 gets 10 whenever 10 visible matches exist. pgvector 0.6
(the embedded server's) has no iterative index scan: when the planner serves the query from the HNSW
index, the index yields at most `hnsw.ef_search` candidates and the filter runs on those, so a selective
filter can leave fewer rows than asked. Such a short answer is therefore asked again in a form no index
can serve, which computes exact distances over the visible rows; a full answer from the index is kept
(the filter only removed rows, so the rows it kept are the nearest visible ones the index found).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Model, QuerySet
from pgvector.django import CosineDistance

from accounts.principal import Principal
from agents.models import Agent
from catalog.choices import Status
from catalog.models import ServerVersion
from core import ratelimit
from core.embeddings import get_provider
from core.metric_choices import MetricType
from core.metrics_client import emit
from core.visibility import visible_rows
from search import virtual_servers
from search.virtual_servers import VIRTUAL
from servers.models import Server, Tool
from skills.models import Skill

AGENT = "a2a_agent"
SERVER = "mcp_server"
TOOL = "tool"
CATALOG_ENTRY = "catalog_entry"  # a server published or mirrored here (its latest version): catalog/
SKILL = "skill"
ENTITY_TYPES = (SERVER, VIRTUAL, TOOL, AGENT, SKILL, CATALOG_ENTRY)
MAX_RESULTS = 100
QUERY_MAX_LENGTH = 1000  # the model reads 256 word pieces; longer queries only cost time
# Candidates the HNSW index hands to the filter: generous, so that a typical filter still leaves `limit`
# rows (bench/semantic.py, 10,000 agents: 4 ms at 100 against 16 ms exact, recall@10 0.994).
MIN_EF_SEARCH = 100
MAX_EF_SEARCH = 1000  # pgvector's upper bound
DEFAULT_EF_SEARCH = 40  # pgvector's default


@dataclass(frozen=True)
class Match:
    """One search hit: what it is, the row, and its cosine similarity to the query."""

    entity_type: str
    row: Model
    relevance_score: float


def search_rate_limit(principal: Principal, client_address: str) -> ratelimit.Decision:
    """Every search runs the model, so each caller (user, or client address when anonymous) may search
    SEMANTIC_SEARCH_RATE_PER_MINUTE times a minute, whatever the surface (the APIs, the search page)."""
    caller = f"user:{principal.username}" if principal.is_authenticated else f"addr:{client_address}"
    return ratelimit.take(
        f"search:{caller}", capacity=settings.SEMANTIC_SEARCH_RATE_PER_MINUTE, period_seconds=60
    )


QUERY_CACHE_SIZE = 2048
_query_vectors: OrderedDict[tuple[str, str, str], list[float]] = OrderedDict()
_query_lock = threading.Lock()


def query_vector(query: str) -> list[float]:
    """The query's embedding; raises EmbeddingError when the provider fails (the API answers 500).

    The model is most of a search's time, and callers repeat their queries, so each process keeps the
    vectors of its QUERY_CACHE_SIZE most recent queries (a vector depends only on the text and the model)."""
    key = (settings.EMBEDDINGS_PROVIDER, settings.EMBEDDINGS_MODEL, query)
    with _query_lock:
        vector = _query_vectors.get(key)
        if vector is not None:
            _query_vectors.move_to_end(key)
            return vector
    vector = get_provider().embed([query])[0]
    with _query_lock:
        _query_vectors[key] = vector
        if len(_query_vectors) > QUERY_CACHE_SIZE:
            _query_vectors.popitem(last=False)
    return vector


def agents_semantic(principal: Principal, query: str, limit: int) -> list[Match]:
    """The enabled agents `principal` may see that are nearest to `query`, best first, at most `limit`."""
    started = time.perf_counter()
    vector = query_vector(query)
    embedded = time.perf_counter()
    matches = _nearest(AGENT, _agents_searchable(principal), vector, limit)
    _report(query, matches, limit, started, embedded, entity_types=[AGENT])
    return matches


def registry_semantic(
    principal: Principal, query: str, entity_types: list[str] | tuple[str, ...], limit: int
) -> list[Match]:
    """Servers, virtual servers, tools, agents, skills and catalog entries nearest to `query` (one embedding
    for all), best first, at most `limit`.

    Each type contributes its own `limit` best, filtered for the caller; the merged list keeps the best
    `limit` overall, so no type can crowd out a better match of another."""
    started = time.perf_counter()
    vector = query_vector(query)
    embedded = time.perf_counter()
    searchable = {
        SERVER: _servers_searchable,
        TOOL: _tools_searchable,
        AGENT: _agents_searchable,
        SKILL: _skills_searchable,
        CATALOG_ENTRY: _catalog_searchable,
    }
    matches = [
        match
        for entity_type in ENTITY_TYPES
        if entity_type in entity_types and entity_type != VIRTUAL
        for match in _nearest(entity_type, searchable[entity_type](principal), vector, limit)
    ]
    if VIRTUAL in entity_types:  # few, embedded by each process as they are (search/virtual_servers.py)
        found = virtual_servers.nearest(principal, vector, limit)
        matches += [Match(VIRTUAL, row, score) for row, score in found]
    matches.sort(key=lambda m: (-m.relevance_score, ENTITY_TYPES.index(m.entity_type), _path_of(m)))
    matches = matches[:limit]
    _report(query, matches, limit, started, embedded, entity_types=list(entity_types))
    return matches


def _report(query: str, matches: list[Match], limit: int, started: float, embedded: float, **metadata):
    """One `tool_discovery` metric per search, with the model's and the database's time apart, since
    they scale differently (the model with the query, the database with the registry). `max_results`
    is the search's only size parameter, reported as top_k; nothing re-ranks, so top_n is None."""
    done = time.perf_counter()
    emit(
        MetricType.TOOL_DISCOVERY,
        duration_ms=(done - started) * 1000,
        dimensions={
            "query": query,
            "results_count": len(matches),
            "top_k": limit,
            "top_n": None,
            "embedding_time_ms": (embedded - started) * 1000,
            "search_time_ms": (done - embedded) * 1000,
        },
        metadata=metadata,
    )


def _agents_searchable(principal: Principal) -> QuerySet:
    """Enabled agents the caller may see; admins too see only enabled ones, since search is for use."""
    return Agent.objects.visible_to(principal).enabled().only("pk", "path", "name", "description", "tags")


def _skills_searchable(principal: Principal) -> QuerySet:
    """Skills the caller may see that have an approved version (what is served: core/visibility.py)."""
    rows = visible_rows(Skill.objects.filter(approved__isnull=False), principal, "skills")
    return rows.only("pk", "path", "name", "description", "tags")


def _servers_searchable(principal: Principal) -> QuerySet:
    return Server.objects.visible_to(principal).enabled().only("pk", "path", "name", "description", "tags")


def _tools_searchable(principal: Principal) -> QuerySet:
    """Tools of enabled servers, as the caller is shown them (servers/policies.py)."""
    return (
        Tool.objects.visible_to(principal)
        .filter(server__is_enabled=True)
        .select_related("server")
        .only("pk", "name", "description", "server__path", "server__name")
    )


def _catalog_searchable(principal: Principal) -> QuerySet:
    """The latest version of each published or mirrored server, unless deleted: listed to every caller
    of /v0.1, so found by every caller who may list (anonymous ones when PUBLIC_LISTING is on)."""
    rows = ServerVersion.objects.filter(is_latest=True).exclude(status=Status.DELETED)
    if not principal.is_authenticated and not settings.PUBLIC_LISTING:
        rows = rows.none()
    return rows.only("pk", "name", "version", "description", "document", "status")


def _nearest(entity_type: str, queryset: QuerySet, vector: list[float], limit: int) -> list[Match]:
    """The `limit` rows of `queryset` nearest to `vector`, filtered before the limit (see the module
    docstring): from the HNSW index when it yields enough rows, else by exact distances."""
    candidates = queryset.filter(embedding__isnull=False).annotate(
        distance=CosineDistance("embedding", vector)
    )
    # `ORDER BY embedding <=> query` is the form the HNSW index serves (when the planner finds it cheaper).
    with _hnsw_ef_search(max(MIN_EF_SEARCH, min(MAX_EF_SEARCH, limit * 4))):
        rows = list(candidates.order_by("distance")[:limit])
    if len(rows) < limit:
        # Ordering by similarity, an expression no index provides, makes PostgreSQL compute the exact
        # distance of every visible row: nothing the filter kept can be missed.
        exact = candidates.annotate(similarity=1 - F("distance")).order_by("-similarity")
        rows = list(exact[:limit])
    return [Match(entity_type, row, min(1.0, max(0.0, 1.0 - float(row.distance)))) for row in rows]


@contextmanager
def _hnsw_ef_search(value: int):
    """`hnsw.ef_search` for the queries inside, put back afterwards: SET LOCAL alone would last until an
    enclosing transaction ends (releasing a savepoint keeps it)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('hnsw.ef_search', true), set_config('hnsw.ef_search', %s, true)",
            [str(value)],
        )
        previous = cursor.fetchone()[0]
        yield
        # Unset before pgvector's library was loaded in this session: the default is pgvector's own.
        cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [previous or str(DEFAULT_EF_SEARCH)])


def _path_of(match: Match) -> str:
    if match.entity_type == CATALOG_ENTRY:
        return match.row.name
    return match.row.server.path if match.entity_type == TOOL else match.row.path
