"""Embedding published and mirrored servers for semantic search: the latest version of each name is
what search finds (catalog entries, `catalog_entry` in the unified search)."""

from catalog.models import ServerVersion
from core.embeddings import rows_embed


def version_text(row: ServerVersion) -> str:
    """A server is found by its name, title and description: short texts, since the model's time grows
    with their length and a mirror embeds thousands (bench/mirror.py)."""
    title = row.document.get("title") if isinstance(row.document, dict) else None
    lines = [row.name, title if isinstance(title, str) else "", row.description]
    return "\n".join(line.strip() for line in lines if line and line.strip())


def versions_embed() -> int:
    """Embed every latest version still marked dirty; returns how many. Older versions are never
    searched, so they are not embedded."""
    dirty = ServerVersion.objects.filter(embedding_dirty=True, is_latest=True).only(
        "pk", "name", "description", "document"
    )
    return rows_embed(dirty, version_text, sweep="catalog")
