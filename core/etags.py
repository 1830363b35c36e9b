"""The one rule for the registry's documents that clients revalidate (the discovery document, MCP Server
Cards, the AI Catalog): a strong ETag over the exact body, and `If-None-Match` matched by any listed tag,
weak or strong."""

import hashlib


def etag_of(body: bytes) -> str:
    return f'"{hashlib.sha256(body).hexdigest()[:32]}"'


def unchanged(if_none_match: str, etag: str) -> bool:
    """Whether the client already holds `etag` (answer 304)."""
    return etag in {tag.strip().removeprefix("W/") for tag in if_none_match.split(",") if tag.strip()}
