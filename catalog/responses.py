"""A stored version as the official API's ServerResponse: the document exactly as published, and the
registry's `_meta` (its lifecycle; for a mirrored version, where it comes from). catalog/listing_sql.py
builds the same object in PostgreSQL for listings; tests/catalog/test_listing_sql.py holds the two equal."""

from django.conf import settings

from catalog.documents import OFFICIAL_META
from catalog.models import ServerVersion
from core.timestamps import rfc3339
from servers.clients import gateway_transport
from servers.models import Server


def mirror_meta_key() -> str:
    return f"io.{settings.REGISTRY_NAMESPACE}/mirror"


def version_response(row: ServerVersion, *, base_url: str, gateway_server: Server | None = None) -> dict:
    """`gateway_server`: the server `row`'s name was put behind (catalog/services/gateway.py), if any."""
    official = {
        "status": row.status,
        "statusChangedAt": rfc3339(row.status_changed_at),
        "publishedAt": rfc3339(row.published_at),
        "updatedAt": rfc3339(row.updated_at),
        "isLatest": row.is_latest,
    }
    if row.status_message:
        official["statusMessage"] = row.status_message
    meta: dict = {OFFICIAL_META: official}
    if row.upstream_id is not None:
        meta[mirror_meta_key()] = {
            "upstream": row.upstream.name,
            "url": row.upstream.url,
            "syncedAt": rfc3339(row.synced_at),
        }
    server = row.document
    if gateway_server is not None:
        server = {**server, "remotes": [gateway_transport(gateway_server, base_url)]}
    return {"server": server, "_meta": meta}
