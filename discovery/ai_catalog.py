"""The AI Catalog (`application/ai-catalog+json`, spec 1.0) at `/.well-known/ai-catalog.json`: one entry per
server and virtual server the caller may see (its MCP Server Card's URL) and per enabled agent it may
see (its A2A card's URL, through the gateway unless A2A_GATEWAY_URLS is off), so nothing appears here
that `/v0.1` or `/api/agents` would not show the same caller; and the registry's own ARD search service
(`application/ai-registry+json`, discovery/ard.py).

Identifiers follow the domain-anchored form the server-card extension recommends,
`urn:air:{host}:{mcp|a2a}:{path with dots}` (`/team/weather` on registry.example.com is
`urn:air:registry.example.com:mcp:team.weather`)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from django.conf import settings
from django.urls import reverse

from agents.cards import gateway_url
from agents.models import Agent
from core.timestamps import rfc3339
from servers.models import Server
from virtual_servers.listing import visible_to

SPEC_VERSION = "1.0"
MEDIA_TYPE = "application/ai-catalog+json"
SERVER_CARD = "application/mcp-server-card+json"
AGENT_CARD = "application/a2a-agent-card+json"
REGISTRY = "application/ai-registry+json"
QUERIES_MAX, QUERY_MAX = 5, 200  # ARD: 2 to 5 representative queries an entry


def identifier(base_url: str, kind: str, path: str) -> str:
    return f"urn:air:{urlsplit(base_url).hostname}:{kind}:{path.strip('/').replace('/', '.')}"


def _typed(media_type: str) -> dict:
    """The entry's media type under both names the drafts use: `type` (ARD, the server-card extension)
    and `mediaType` (the AI Catalog specification's text)."""
    return {"type": media_type, "mediaType": media_type}


def servers_shown(principal):
    """The enabled servers the caller may see (the one visibility rule: `Server.objects.visible_to`)."""
    return Server.objects.visible_to(principal).enabled().for_listing().order_by("path")


def server_entry(server, base_url: str) -> dict:
    return {
        "identifier": identifier(base_url, "mcp", server.path),
        "displayName": server.name or server.path,
        **_typed(SERVER_CARD),
        "url": f"{base_url}{server.path}/mcp/server-card",
        "description": server.description,
        "version": server.version,
        "tags": list(server.tags),
        "updatedAt": rfc3339(server.updated_at),
    }


def virtual_entry(virtual, base_url: str) -> dict:
    return {
        "identifier": identifier(base_url, "mcp", virtual.path),
        "displayName": virtual.name,
        **_typed(SERVER_CARD),
        "url": f"{base_url}{virtual.path}/mcp/server-card",
        "description": virtual.description,
        "updatedAt": rfc3339(virtual.updated_at),
    }


def agent_entry(agent: Agent, base_url: str) -> dict:
    return {
        "identifier": identifier(base_url, "a2a", agent.path),
        "displayName": agent.name,
        **_typed(AGENT_CARD),
        "url": _agent_card_url(agent, base_url),
        "description": agent.description,
        "version": agent.version,
        "tags": list(agent.tags),
        "representativeQueries": representative_queries(agent),
        "updatedAt": rfc3339(agent.updated_at),
    }


def representative_queries(agent: Agent) -> list[str]:
    """2 to 5 natural-language queries an agent answers (ARD's `representativeQueries`): its skills'
    examples first, then their descriptions, then the sentences of its own description and its name."""
    skills = [skill for skill in agent.skills or [] if isinstance(skill, dict)]
    candidates: list = []
    for skill in skills:
        examples = skill.get("examples")
        candidates.extend(examples if isinstance(examples, list) else [])
    candidates.extend(skill.get("description") for skill in skills)
    candidates.extend(re.split(r"(?<=[.!?])\s+", agent.description or ""))
    queries = _distinct([*candidates, agent.name])[:QUERIES_MAX]
    return queries if len(queries) >= 2 else _distinct([*queries, f"{agent.name} agent", "agent"])[:2]


def _distinct(texts: list) -> list[str]:
    """The strings among `texts`, whitespace collapsed and cut to QUERY_MAX, each once (case aside)."""
    found: dict[str, str] = {}
    for text in texts:
        if isinstance(text, str) and (text := " ".join(text.split())[:QUERY_MAX].strip()):
            found.setdefault(text.casefold(), text)
    return list(found.values())


def registry_entry(base_url: str) -> dict:
    """The registry's own ARD search service (discovery/ard.py), as ARD has clients find it."""
    return {
        "identifier": identifier(base_url, "registry", "search"),
        "displayName": f"{settings.REGISTRY_SERVICE_NAME} search",
        **_typed(REGISTRY),
        "url": f"{base_url}/ard",
        "description": "Semantic search over this registry's servers, virtual servers and agents (ARD).",
    }


def catalog_of(principal, base_url: str) -> dict:
    agents = Agent.objects.visible_to(principal).filter(is_enabled=True).defer("embedding").order_by("path")
    entries = [
        *(server_entry(server, base_url) for server in servers_shown(principal)),
        *(virtual_entry(v, base_url) for v in visible_to(principal).filter(is_enabled=True).order_by("path")),
        *(agent_entry(agent, base_url) for agent in agents),
        registry_entry(base_url),
    ]
    return {
        "specVersion": SPEC_VERSION,
        "host": {"displayName": settings.REGISTRY_SERVICE_NAME, "identifier": urlsplit(base_url).hostname},
        "entries": entries,
    }


def _agent_card_url(agent: Agent, base_url: str) -> str:
    if settings.A2A_GATEWAY_URLS:
        return f"{gateway_url(agent, base_url)}/.well-known/agent-card.json"
    detail = reverse("agents-api:detail", kwargs={"agent_path": agent.path.lstrip("/")})
    return f"{base_url}{detail}?format=a2a"
