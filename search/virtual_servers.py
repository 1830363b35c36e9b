"""Virtual servers in semantic search. They are few (an operator's curated bundles), so they are not stored
with vectors: each web process embeds a virtual server's text once (its name, description and what its
members are) and keeps the vector by that text, so an edit is searched by its new text at once; the
caller's visible, enabled virtual servers are then ranked by cosine similarity in Python."""

from __future__ import annotations

import math
import threading
from collections import OrderedDict

from django.conf import settings

from core.embeddings import get_provider
from virtual_servers.listing import visible_to

VIRTUAL = "virtual_server"
VECTORS_KEPT = 4096
_vectors: OrderedDict[tuple[str, str, str], list[float]] = OrderedDict()
_lock = threading.Lock()


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
    vectors = _vectors_of(texts)
    scored = [(virtual, _cosine(vector, found)) for virtual, found in zip(rows, vectors, strict=True)]
    scored.sort(key=lambda pair: (-pair[1], pair[0].path))
    return scored[:limit]


def _vectors_of(texts: list[str]) -> list[list[float]]:
    model = (settings.EMBEDDINGS_PROVIDER, settings.EMBEDDINGS_MODEL)
    found: dict[str, list[float]] = {}
    with _lock:
        for text in set(texts):
            if (kept := _vectors.get((*model, text))) is not None:
                found[text] = kept
    missing = sorted(set(texts) - set(found))
    if missing:  # the model runs outside the lock
        found.update(zip(missing, get_provider().embed(missing), strict=True))
        with _lock:
            for text in missing:
                _vectors[(*model, text)] = found[text]
            while len(_vectors) > VECTORS_KEPT:
                _vectors.popitem(last=False)
    return [found[text] for text in texts]


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return min(1.0, max(0.0, dot / norms)) if norms else 0.0
