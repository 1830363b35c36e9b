"""Published versions in a /v0.1 page, assembled by PostgreSQL: the stored document as `server` and the
registry's `_meta`, the shape of catalog/responses.version_response, built without model instances."""

from django.db import connection

from catalog.documents import OFFICIAL_META
from catalog.responses import mirror_meta_key
from servers.v01_sql import Sql, iso


def _server_json(q: Sql, base_url: str) -> str:
    """The document, with the gateway's transport as its only remote once it is behind the gateway."""
    sse = "gs.supported_transports = ARRAY['sse']::varchar(32)[]"
    remote = (
        f"jsonb_build_object('type', CASE WHEN {sse} THEN 'sse' ELSE 'streamable-http' END, "
        f"'url', {q.p(base_url)} || gs.path || CASE WHEN {sse} THEN '/sse' ELSE '/mcp' END)"
    )
    remotes = f"jsonb_set(v.document, '{{remotes}}', jsonb_build_array({remote}))"
    return f"CASE WHEN gs.id IS NULL THEN v.document ELSE {remotes} END"


def _version_json(q: Sql, base_url: str) -> str:
    # Placeholders are made in the order they appear in the text, so their parameters line up.
    server = _server_json(q, base_url)
    official_key = q.p(OFFICIAL_META)
    official = (
        f"jsonb_strip_nulls(jsonb_build_object('status', v.status, "
        f"'statusChangedAt', {iso('v.status_changed_at')}, 'publishedAt', {iso('v.published_at')}, "
        f"'updatedAt', {iso('v.updated_at')}, 'isLatest', v.is_latest, "
        "'statusMessage', nullif(v.status_message, '')))"
    )
    mirror = (
        "CASE WHEN v.upstream_id IS NULL THEN '{}'::jsonb "
        f"ELSE jsonb_build_object({q.p(mirror_meta_key())}, jsonb_build_object('upstream', u.name, "
        f"'url', u.url, 'syncedAt', {iso('v.synced_at')})) END"
    )
    meta = f"jsonb_build_object({official_key}, {official}) || {mirror}"
    return f"jsonb_build_object('server', {server}, '_meta', {meta})"


def versions_page_rows(ids: list[int], *, base_url: str) -> list[tuple[str, str, str]]:
    """`[(name, version, ServerResponse as JSON text)]` of the versions `ids`, by name and version. The
    page's ids are chosen first by a lean query, so an empty page costs no JSON query at all."""
    if not ids:
        return []
    q = Sql()
    version_json = _version_json(q, base_url)
    q.params.append(list(ids))
    sql = (
        f"SELECT v.name, v.version, ({version_json})::text FROM catalog_serverversion v "
        "LEFT JOIN catalog_upstream u ON u.id = v.upstream_id "
        "LEFT JOIN catalog_gatewaybinding b ON b.name = v.name "
        "LEFT JOIN servers_server gs ON gs.id = b.server_id "
        "WHERE v.id = ANY(%s) ORDER BY v.name, v.version"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, q.params)
        return cursor.fetchall()
