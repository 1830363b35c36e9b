"""Opaque, signed keyset cursors for /v0.1: a cursor names the last (name, version) of a page and the
query it belongs to, so a forged, garbled or foreign cursor is refused instead of silently restarting."""

import hashlib

from django.core import signing

SALT = "registry.v01.cursor"
VERSION = 2


class BadCursor(ValueError):
    pass


def _fingerprint(query: dict) -> str:
    canonical = "&".join(f"{key}={query[key] or ''}" for key in sorted(query))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def encode_cursor(after: tuple[str, str], query: dict) -> str:
    return signing.dumps({"v": VERSION, "a": list(after), "q": _fingerprint(query)}, salt=SALT, compress=True)


def decode_cursor(cursor: str, query: dict) -> tuple[str, str]:
    """The (name, version) the next page starts after; BadCursor when the cursor is not one of ours for
    this query."""
    try:
        payload = signing.loads(cursor, salt=SALT)
    except signing.BadSignature:
        raise BadCursor("The cursor is not valid; start again without it.") from None
    after = payload.get("a") if isinstance(payload, dict) else None
    well_formed = isinstance(after, list) and len(after) == 2 and all(isinstance(part, str) for part in after)
    if not well_formed or payload.get("v") != VERSION:
        raise BadCursor("The cursor is from an older version of the registry; start again without it.")
    if payload.get("q") != _fingerprint(query):
        raise BadCursor(
            "The cursor belongs to a different query (its search, updated_since, version or include_deleted)."
        )
    return after[0], after[1]
