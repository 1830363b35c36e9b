"""Embedding servers and tools for semantic search: the text each is found by and the batch work of the
embedding task (writes ask for it through servers/services/embeddings.py)."""

from django.db.models import Prefetch

from core.embeddings import rows_embed
from servers.models import Server, Tool

# Changing any of these changes what semantic search should find for a server (tools are tracked apart).
EMBEDDED_FIELDS = {"name", "description", "tags"}


def server_text(server: Server) -> str:
    """A server is found by its name, description, tags and the names of its tools."""
    tool_names = [tool.name.replace("_", " ") for tool in server.tools.all()]
    lines = [
        server.name,
        server.description,
        f"Tags: {', '.join(server.tags)}" if server.tags else "",
        f"Tools: {', '.join(tool_names)}" if tool_names else "",
    ]
    return "\n".join(line.strip() for line in lines if line and line.strip())


def tool_text(tool: Tool) -> str:
    """A tool is found by its name read as words (`convert_currency` → "convert currency") and its
    description."""
    return "\n".join(part for part in (tool.name.replace("_", " ").strip(), tool.description.strip()) if part)


def servers_embed(ids: list[int] | None = None) -> int:
    """Embed the given servers, or every dirty server, when they are marked dirty; returns how many."""
    dirty = (
        Server.objects.filter(embedding_dirty=True)
        .defer("embedding", "headers")
        .prefetch_related(Prefetch("tools", queryset=Tool.objects.only("server_id", "name")))
    )
    if ids is not None:
        return rows_embed(dirty.filter(pk__in=ids), server_text)
    return rows_embed(dirty, server_text, sweep="servers")


def tools_embed(ids: list[int] | None = None, *, server_ids: list[int] | None = None) -> int:
    """Embed the given tools (or the tools of `server_ids`), or every dirty tool, when they are marked
    dirty; returns how many."""
    dirty = Tool.objects.filter(embedding_dirty=True).only("pk", "server_id", "name", "description")
    if ids is None and server_ids is None:
        return rows_embed(dirty, tool_text, sweep="tools")
    if ids is not None:
        dirty = dirty.filter(pk__in=ids)
    if server_ids is not None:
        dirty = dirty.filter(server_id__in=server_ids)
    return rows_embed(dirty, tool_text)
