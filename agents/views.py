"""The agents page: the agents the caller may see with their skills, enable/disable for those allowed,
and the semantic search box over agents, servers and tools together (the unified search's reads, rate
limit and error), with scores. A plain form and page; no JavaScript needed."""

import logging
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from django.conf import settings
from django.contrib import messages
from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from accounts.principal import Principal
from accounts.views import back_to, session_page
from agents import policies, services
from agents.models import Agent
from agents.policies import agent_visible
from agents.search import (
    AGENT,
    CATALOG_ENTRY,
    ENTITY_TYPES,
    SERVER,
    TOOL,
    Match,
    registry_semantic,
    search_rate_limit,
)
from agents.selectors import agents_listed
from core.embeddings import EmbeddingError
from core.errors import ApiError, ErrorCode
from core.validators import normalize_path
from servers.views import problem_page

logger = logging.getLogger(__name__)

SEARCH_RESULTS = 20
QUERY_MAX_LENGTH = 1000
TYPE_LABELS = {AGENT: "Agent", SERVER: "MCP server", TOOL: "Tool", CATALOG_ENTRY: "Catalog"}


@dataclass(frozen=True)
class AgentRow:
    agent: Agent
    skills: list[str]  # skill names
    can_toggle: bool


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
    if match.entity_type == TOOL:  # opens its server's row on the dashboard, where the tool is listed
        return Hit(
            **common,
            name=row.name,
            path=row.server.path,
            description=row.description,
            score=match.relevance_score,
            server_name=row.server.name,
            url=f"/?{urlencode({'query': row.server.path})}",
        )
    url = f"/?{urlencode({'query': row.path})}" if match.entity_type == SERVER else f"/agents#agent{row.path}"
    return Hit(
        **common,
        name=row.name,
        path=row.path,
        description=row.description,
        score=match.relevance_score,
        url=url,
    )


def _search(request, principal: Principal, query: str) -> tuple[list[Hit], str, int]:
    """(hits, why there are none when the search could not run, HTTP status)."""
    if len(query) > QUERY_MAX_LENGTH:
        return [], f"Ask in at most {QUERY_MAX_LENGTH} characters.", 400
    if not search_rate_limit(principal, request.META.get("REMOTE_ADDR", "")).allowed:
        return [], "Too many searches; try again in a minute.", 429
    try:
        matches = registry_semantic(principal, query, ENTITY_TYPES, SEARCH_RESULTS)
    except EmbeddingError:
        logger.exception("semantic search failed (request %s)", getattr(request, "request_id", ""))
        return [], "Semantic search is unavailable: the query could not be embedded. Try again later.", 500
    floor = settings.SEARCH_PAGE_MIN_SCORE
    return [_hit(match) for match in matches if match.relevance_score >= floor], "", 200


@require_GET
@session_page
def agents_page(request, principal):
    """GET /agents[?q=...]: the caller's agents and, with `q`, what the unified search finds."""
    query = request.GET.get("q", "").strip()
    hits, search_error, status = _search(request, principal, query) if query else ([], "", 200)
    agents, total = agents_listed(principal)
    rows = [
        AgentRow(
            agent=agent,
            skills=[
                str(skill.get("name") or skill.get("id")) for skill in agent.skills if isinstance(skill, dict)
            ],
            can_toggle=policies.agent_may_toggle(principal, agent),
        )
        for agent in agents
    ]
    context = {"rows": rows, "total": total, "query": query, "hits": hits, "search_error": search_error}
    return render(request, "agents/agents.html", context, status=status)


@require_POST
@session_page
def agent_toggle_form(request, principal, agent_path):
    """POST /agents/<path>/toggle with `enabled=on|off`: the page's enable/disable button."""
    agent = agent_visible(principal, normalize_path(agent_path))
    if agent is None:
        error = ApiError(404, ErrorCode.NOT_FOUND, f"No agent is registered at {normalize_path(agent_path)}.")
        return problem_page(request, error)
    if not policies.agent_may_toggle(principal, agent):
        message = f"You may not enable or disable {agent.path}: it needs toggle_agent."
        return problem_page(request, ApiError(403, ErrorCode.PERMISSION_DENIED, message))
    agent = services.agent_toggle(actor=principal, agent=agent, enabled=request.POST.get("enabled") == "on")
    messages.success(request, f"Agent {agent.path} {'enabled' if agent.is_enabled else 'disabled'}.")
    response = HttpResponseRedirect(back_to(request, reverse("agents:page")))
    response.status_code = 303
    return response
