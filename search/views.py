"""The search page: agents, MCP servers, tools and catalog entries found by meaning, best first, with
their scores and links to where each lives. A plain form and page; no JavaScript needed. The reads, the
rate limit and the error are the search API's (search/selectors.py)."""

import logging
from dataclasses import dataclass
from urllib.parse import quote

from django.conf import settings
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from accounts.principal import Principal
from accounts.views import session_page
from core.embeddings import EmbeddingError
from search.selectors import (
    AGENT,
    CATALOG_ENTRY,
    ENTITY_TYPES,
    QUERY_MAX_LENGTH,
    SERVER,
    SKILL,
    TOOL,
    VIRTUAL,
    Match,
    registry_semantic,
    search_rate_limit,
)

logger = logging.getLogger(__name__)

SEARCH_RESULTS = 20
TYPE_LABELS = {
    AGENT: "Agent",
    SKILL: "Skill",
    SERVER: "MCP server",
    VIRTUAL: "Virtual server",
    TOOL: "Tool",
    CATALOG_ENTRY: "Catalog",
}


@dataclass(frozen=True)
class Hit:
    """One search result as the page shows it."""

    entity_type: str
    label: str
    name: str
    path: str
    description: str
    score: float
    server_name: str = ""
    url: str = ""  # where the page links the hit to, when it has a page of its own


def _hit(match: Match) -> Hit:
    row = match.row
    common = {"entity_type": match.entity_type, "label": TYPE_LABELS[match.entity_type]}
    if match.entity_type == CATALOG_ENTRY:  # a published or mirrored server: named, not reached at a path
        return Hit(
            **common,
            name=row.name,
            path="",
            description=row.description,
            score=match.relevance_score,
            url=f"/catalog?q={quote(row.name)}",
        )
    if match.entity_type == TOOL:  # its place on its server's page
        return Hit(
            **common,
            name=row.name,
            path=row.server.path,
            description=row.description,
            score=match.relevance_score,
            server_name=row.server.name,
            url=f"{reverse('servers:server', args=[row.server.path[1:]])}#tool-{quote(row.name)}",
        )
    url = {  # each its own page (an agent: its row on the agents page)
        SERVER: lambda: reverse("servers:server", args=[row.path[1:]]),
        VIRTUAL: lambda: reverse("virtual_servers:page", args=[row.path[1:]]),
        SKILL: lambda: f"/#skill{row.path}",  # its row in the dashboard's skills section
    }.get(match.entity_type, lambda: f"/agents#agent{row.path}")()
    return Hit(
        **common,
        name=row.name,
        path=row.path,
        description=row.description,
        score=match.relevance_score,
        url=url,
    )


CLOSEST_SHOWN = 5  # when nothing reaches SEARCH_PAGE_MIN_SCORE, the closest matches shown, marked weak


def _search(request, principal: Principal, query: str) -> tuple[list[Hit], bool, str, int]:
    """(hits, whether they are only the closest matches under the cut-off, why there are none when the
    search could not run, HTTP status)."""
    if len(query) > QUERY_MAX_LENGTH:
        return [], False, f"Ask in at most {QUERY_MAX_LENGTH} characters.", 400
    if not search_rate_limit(principal, request.META.get("REMOTE_ADDR", "")).allowed:
        return [], False, "Too many searches; try again in a minute.", 429
    try:
        matches = registry_semantic(principal, query, ENTITY_TYPES, SEARCH_RESULTS)
    except EmbeddingError:
        logger.exception("semantic search failed (request %s)", getattr(request, "request_id", ""))
        message = "Semantic search is unavailable: the query could not be embedded. Try again later."
        return [], False, message, 500
    floor = settings.SEARCH_PAGE_MIN_SCORE
    close = [_hit(match) for match in matches if match.relevance_score >= floor]
    if close or not matches:
        return close, False, "", 200
    return [_hit(match) for match in matches[:CLOSEST_SHOWN]], True, "", 200


@require_GET
@session_page
def search_page(request, principal):
    """GET /search[?q=...]: the form and, with `q`, what the registry-wide search finds for the caller;
    when nothing is close enough, the closest matches, said to be weak."""
    query = request.GET.get("q", "").strip()
    hits, weak, search_error, status = _search(request, principal, query) if query else ([], False, "", 200)
    context = {
        "query": query,
        "hits": hits,
        "weak": weak,
        "floor": settings.SEARCH_PAGE_MIN_SCORE,
        "search_error": search_error,
    }
    return render(request, "search/search.html", context, status=status)
