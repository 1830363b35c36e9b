"""Virtual servers in semantic search. They are few (an operator's curated bundles), so they are not stored
with vectors: each web process embeds a virtual server's text once (its name, description and what its
members are) and keeps the vector by that text, so an edit is searched by its new text at once; the
caller's visible, enabled virtual servers are then ranked by cosine similarity in Python."""

from __future__ import annotations

from core.embeddings import cosine, vectors_kept
from virtual_servers.listing import visible_to

VIRTUAL = "virtual_server"


def virtual_text(virtual) -> str:
    members = [f"{member.server.name} ({member.server.path})" for member in virtual.members.all()]
    lines = [virtual.name, virtual.description, f"Virtual server of: {', '.join(members)}"]
    return "\n".join(line for line in lines if line)


def nearest(principal, vector: list[float], limit: int) -> list[tuple[object, float]]:
    """(virtual server, cosine similarity) of the enabled virtual servers `principal` sees, best first."""
    rows = list(visible_to(principal).filter(is_enabled=True))
    if not rows:
        return []
    texts = [virtual_text(virtual) for virtual in rows]
    vectors = vectors_kept(texts)
    scored = [(virtual, cosine(vector, found)) for virtual, found in zip(rows, vectors, strict=True)]
    scored.sort(key=lambda pair: (-pair[1], pair[0].path))
    return scored[:limit]
