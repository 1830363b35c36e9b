"""Embedding writes: the rows marked dirty get the vectors of their texts (search/texts.py), in batches
through core.embeddings.rows_embed. Each function embeds the given rows, or with none given every dirty
row of its kind (one such sweep at a time), and returns how many rows it stored."""

from django.db.models import Prefetch

from agents.models import Agent
from catalog.models import ServerVersion
from core.embeddings import rows_embed
from search.texts import agent_text, server_text, skill_text, tool_text, version_text
from servers.models import Server, Tool
from skills.models import Skill


def agents_embed(agent_ids: list[int] | None = None) -> int:
    """An agent edited while it was embedded stays dirty for the next run."""
    dirty = Agent.objects.embedding_dirty().defer("embedding")
    if agent_ids is not None:
        return rows_embed(dirty.filter(pk__in=agent_ids), agent_text)
    return rows_embed(dirty, agent_text, sweep="agents")


def servers_embed(ids: list[int] | None = None) -> int:
    dirty = (
        Server.objects.filter(embedding_dirty=True)
        .defer("embedding", "sealed_headers")
        .prefetch_related(Prefetch("tools", queryset=Tool.objects.only("server_id", "name")))
    )
    if ids is not None:
        return rows_embed(dirty.filter(pk__in=ids), server_text)
    return rows_embed(dirty, server_text, sweep="servers")


def tools_embed(ids: list[int] | None = None, *, server_ids: list[int] | None = None) -> int:
    """The given tools, or the tools of `server_ids`, or every dirty tool."""
    dirty = Tool.objects.filter(embedding_dirty=True).only("pk", "server_id", "name", "description")
    if ids is None and server_ids is None:
        return rows_embed(dirty, tool_text, sweep="tools")
    if ids is not None:
        dirty = dirty.filter(pk__in=ids)
    if server_ids is not None:
        dirty = dirty.filter(server_id__in=server_ids)
    return rows_embed(dirty, tool_text)


def versions_embed() -> int:
    """Every latest catalog version still dirty: older versions are never searched, so never embedded."""
    dirty = ServerVersion.objects.filter(embedding_dirty=True, is_latest=True).only(
        "pk", "name", "description", "document"
    )
    return rows_embed(dirty, version_text, sweep="catalog")


def skills_embed(skill_ids: list[int] | None = None) -> int:
    """Skills with an approved version (what their frontmatter says); a skill edited meanwhile stays dirty."""
    dirty = Skill.objects.filter(embedding_dirty=True).only(
        "pk", "name", "description", "tags", "compatibility"
    )
    if skill_ids is not None:
        return rows_embed(dirty.filter(pk__in=skill_ids), skill_text)
    return rows_embed(dirty, skill_text, sweep="skills")
