"""The gateway's servers in a /v0.1 page, assembled by PostgreSQL: one query selects them (the page's
keyset query, with the number of tools the caller is shown) and builds each one's JSON
(`json_build_object`), so a page of 100 servers costs one round trip and no model instances. The shape is
`servers.v01_responses.server_response`'s, field for field; tests/servers/test_v01_sql.py holds
the two to the same output. catalog/listing.py merges these rows with the published versions'."""

from django.conf import settings
from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import QuerySet

from core import attestations
from servers.naming import name_prefix
from servers.scanning import SCAN_SCOPE, SCANNER_DISTRIBUTION
from servers.v01_responses import DESCRIPTION_MAX, OFFICIAL_META, SCAN_META

# What Python's str.strip() removes: ASCII and Unicode white space.
_SPACE = r"[\s\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"


class Sql:
    """SQL text with its positional parameters, in the order they appear."""

    def __init__(self):
        self.params: list = []

    def p(self, value) -> str:
        """A placeholder for `value`, typed (`json_build_object` takes any type, so none is inferred)."""
        self.params.append(value)
        return "%s::integer" if isinstance(value, int) else "%s::text"


def iso(column: str) -> str:
    """Python's `isoformat()` with `Z` for UTC: microseconds only when there are any; null stays null."""
    utc = f"({column} AT TIME ZONE 'UTC')"
    return (
        f"CASE WHEN {column} IS NULL THEN NULL ELSE to_char({utc}, 'YYYY-MM-DD\"T\"HH24:MI:SS') || "
        f"CASE WHEN (date_part('microseconds', {column})::bigint %% 1000000) = 0 THEN '' "
        f"ELSE to_char({utc}, '.US') END || 'Z' END"
    )


def _server_json(q: Sql, base_url: str) -> str:
    namespace = settings.REGISTRY_NAMESPACE
    sse = "s.supported_transports = ARRAY['sse']::varchar(32)[]"

    # Each placeholder in the text takes its own parameter, so the pieces used twice are functions.
    def name() -> str:
        return f"({q.p(f'io.{namespace}/')} || replace(substr(s.path, 2), '/', '.'))"

    def title() -> str:
        return f"left(coalesce(nullif(s.name, ''), {name()}), {DESCRIPTION_MAX})"

    # Pieces are made in the order they appear in the text, so their parameters line up.
    server_name = name()
    stripped = f"regexp_replace(s.description, {q.p(f'^{_SPACE}+|{_SPACE}+$')}, '', 'g')"
    description = f"left(coalesce(nullif({stripped}, ''), {title()}), {DESCRIPTION_MAX})"
    server_title = title()
    remote = (
        f"json_build_object('type', CASE WHEN {sse} THEN 'sse' ELSE 'streamable-http' END, "
        f"'url', {q.p(base_url)} || s.path || CASE WHEN {sse} THEN '/sse' ELSE '/mcp' END)"
    )
    internal_key = q.p(f"io.{namespace}/internal")
    # The tools the caller is shown (servers.policies.shown_tool_count), chosen with the page.
    internal = (
        "json_build_object('path', s.path, 'is_enabled', s.is_enabled, 'health_status', s.health_status, "
        "'num_tools', s.shown, 'tags', to_json(s.tags), 'license', s.license)"
    )
    # The scan receipt (servers.v01_responses.scan_receipt), for servers whose pinned set was scanned.
    scan_key, scanner = q.p(SCAN_META), q.p(SCANNER_DISTRIBUTION)
    url = f"{q.p(base_url)} || s.path || CASE WHEN {sse} THEN '/sse' ELSE '/mcp' END"
    scopes = ", ".join(q.p(scope) for scope in SCAN_SCOPE)
    receipt = (
        f"json_build_object('scanner', {scanner}, 'scanner_version', s.tool_scanner_version, "
        f"'rule_set_ref', s.tool_scan_rules, 'scanned_artifact_ref', {url} || '#tools/list', "
        "'scanned_artifact_digest', 'sha256:' || s.tool_set_digest, "
        f"'scan_scope', json_build_array({scopes}), 'verdict', s.tool_scan_verdict, "
        f"'scanned_at', {iso('s.tools_scanned_at')}, 'attestation', 'registry-attested')"
    )
    attestation = (  # the receipt signed (servers.v01_responses.server_response)
        f"CASE WHEN s.tool_attestation = '' THEN '{{}}'::jsonb ELSE jsonb_build_object("
        f"{q.p(attestations.meta_key())}, json_build_object('attestation', s.tool_attestation)) END"
    )
    server_meta = (
        f"json_build_object({internal_key}, {internal})::jsonb || CASE WHEN s.tools_scanned_at IS NULL "
        f"THEN '{{}}'::jsonb ELSE jsonb_build_object({scan_key}, json_build_array({receipt})) END "
        f"|| {attestation}"
    )
    server = (
        f"json_build_object('name', {server_name}, 'description', {description}, 'version', s.version, "
        f"'title', {server_title}, 'remotes', json_build_array({remote}), '_meta', {server_meta})"
    )
    registry = (
        f"json_build_object('last_checked', {iso('s.last_checked_at')}, 'health_status', s.health_status)"
    )
    official = (
        f"json_build_object('status', 'active', 'publishedAt', {iso('s.created_at')}, "
        f"'updatedAt', {iso('s.updated_at')}, 'isLatest', true)"
    )
    meta = f"json_build_object({q.p(f'io.{namespace}/registry')}, {registry}, '{OFFICIAL_META}', {official})"
    return f"json_build_object('server', {server}, '_meta', {meta})"


# The columns a server's JSON is built from: the page's keyset query selects them, so nothing is joined.
PAGE_FIELDS = (
    "path",
    "name",
    "description",
    "version",
    "supported_transports",
    "is_enabled",
    "health_status",
    "tags",
    "license",
    "tool_scanner_version",
    "tool_scan_rules",
    "tool_set_digest",
    "tool_scan_verdict",
    "tools_scanned_at",
    "tool_attestation",
    "last_checked_at",
    "created_at",
    "updated_at",
)


def servers_page_rows(chosen: QuerySet, *, base_url: str) -> list[tuple[str, str, str]]:
    """`[(name, version, ServerResponse as JSON text)]` of the servers `chosen` picks, by name (the order
    of their paths, compared as bytes): `chosen` is the page's keyset query giving PAGE_FIELDS and
    `shown`, the number of tools the caller is shown there; it runs inside this one query."""
    try:
        chosen_sql, chosen_params = chosen.query.sql_with_params()
    except EmptyResultSet:  # a caller who may see no server
        return []
    q = Sql()
    name = f"({q.p(name_prefix())} || replace(substr(s.path, 2), '/', '.'))"  # first in the text, first made
    server_json = _server_json(q, base_url)
    sql = f'SELECT {name}, s.version, ({server_json})::text FROM ({chosen_sql}) s ORDER BY s.path COLLATE "C"'
    with connection.cursor() as cursor:
        cursor.execute(sql, [*q.params, *chosen_params])  # in the order of their placeholders
        return cursor.fetchall()
