"""Reads for servers. Every listing filters through `Server.objects.visible_to(principal)`."""

from datetime import datetime
from urllib.parse import urlsplit

from django.db.models import Count, F, Func, Prefetch, Q, TextField, Value
from django.db.models.functions import Collate, Concat, Replace, Substr

from core.epochs import MISSING
from servers.cache import ROUTES
from servers.choices import NOT_HEALTHY, ToolChangeStatus
from servers.live.entries import health_entry, public_entry
from servers.models import Server, Tool, ToolChange
from servers.naming import name_prefix
from servers.policies import shown_counts, shown_tool_count, shown_with_tools, tool_counts
from servers.search_index import trigram_prefilter
from servers.v01_sql import PAGE_FIELDS, servers_page_rows

LIST_LIMIT = 500  # servers in one dashboard listing; the dashboard says when a filter would show more
QUERY_MAX_LENGTH = 200


def servers_listed(principal, query: str = "", *, limit: int = LIST_LIMIT):
    """The visible servers matching `query`, at most `limit`, and whether more matched."""
    servers = Server.objects.visible_to(principal).for_listing()
    query = query.strip()[:QUERY_MAX_LENGTH]
    if query:
        # Newline-joined so a query never matches across two tags.
        tags = Func(F("tags"), Value("\n"), function="array_to_string", output_field=TextField())
        servers = servers.annotate(tags_text=tags).filter(
            Q(name__icontains=query)
            | Q(path__icontains=query)
            | Q(description__icontains=query)
            | Q(tags_text__icontains=query)
        )
    rows = list(servers.defer("sealed_headers").order_by("path")[: limit + 1])
    return rows[:limit], len(rows) > limit


# The dashboard's state filters: which servers each shows.
IN_STATE = {
    "enabled": lambda server: server.is_enabled,
    "disabled": lambda server: not server.is_enabled,
    "unhealthy": lambda server: server.is_enabled and server.health_status in NOT_HEALTHY,
}


def dashboard_servers(principal, query: str = "", state: str = ""):
    """The dashboard's servers: those `servers_listed` gives with their tools (names, descriptions,
    schemas, no embeddings), the counts by state of all of them, and those in `state` when one is asked.
    Returns (servers, counts, truncated)."""
    servers, truncated = servers_listed(principal, query)
    shown_with_tools(principal, servers)
    counts = {"all": len(servers)} | {name: sum(map(test, servers)) for name, test in IN_STATE.items()}
    if state in IN_STATE:
        servers = [server for server in servers if IN_STATE[state](server)]
    return servers, counts, truncated


def status_rows() -> list[dict]:
    """The public status page's rows: every enabled server's name, path and public health (one query)."""
    fields = ("path", "name", "health_status", "last_checked_at", "num_tools")
    return [
        dict(zip(fields, values, strict=True))
        for values in Server.objects.enabled().order_by("path").values_list(*fields)
    ]


# What the gateway reads of a server it routes to (the route cache holds rows with these fields only).
GATEWAY_FIELDS = (
    "path",
    "name",
    "version",
    "is_enabled",
    "proxy_pass_url",
    "sealed_headers",
    "upstream_auth",
    "user_secret_header",
    "tags",  # limits name servers by tag (limits/decision.py)
    "updated_at",
)


def server_for_gateway(candidates: tuple[str, ...], epoch=MISSING) -> Server | None:
    """The server a gateway path names: the longest registered path among `candidates` (longest first,
    as `gateway.paths.gateway_path` gives them), enabled or not. One query, for the built-in
    gateway and `/validate` alike, or none while the route cache (servers/cache.py) holds the answer."""
    if epoch is MISSING:
        epoch = ROUTES.epoch()
    cached = ROUTES.get(candidates, epoch)
    if cached is not MISSING:
        return cached
    found = Server.objects.filter(path__in=candidates).only(*GATEWAY_FIELDS)
    servers = {server.path: server for server in found}
    server = next((servers[candidate] for candidate in candidates if candidate in servers), None)
    ROUTES.put(candidates, server, epoch)
    return server


def server_for_gateway_cached(candidates: tuple[str, ...], epoch):
    """What server_for_gateway would answer, from the route cache alone; MISSING when it does not know."""
    return ROUTES.get(candidates, epoch)


def _registry_name():
    """The `io.<namespace>/<name>` of each row, computed in SQL (for `search`)."""
    return Concat(
        Value(name_prefix()),
        Replace(Substr(F("path"), 2), Value("/"), Value(".")),
    )


def servers_page_query(
    principal,
    *,
    after: str | None,
    search: str = "",
    updated_since: datetime | None = None,
    version: str | None = None,
):
    """The servers `principal` may see matching the filters, after the cursor path `after`, by path
    compared as bytes (the order of their registry names, catalog/listing.py)."""
    path = Collate("path", "C")
    rows = Server.objects.visible_to(principal).for_listing().alias(path_c=path).order_by(path)
    if search:
        rows = trigram_prefilter(rows, search).alias(registry_name=_registry_name())
        rows = rows.filter(Q(registry_name__icontains=search) | Q(description__icontains=search))
    if updated_since is not None:
        rows = rows.filter(updated_at__gte=updated_since)
    if version and version != "latest":
        rows = rows.filter(version=version)
    if after is not None:
        rows = rows.filter(path_c__gt=after)
    return rows


def servers_page(principal, *, after: str | None, limit: int, **filters) -> tuple[list[Server], bool]:
    """One keyset page of the servers `principal` may see, ordered by path (the same order as the
    registry name); returns (rows, more_after_these)."""
    page = list(servers_page_query(principal, after=after, **filters)[: limit + 1])
    return shown_counts(principal, page[:limit]), len(page) > limit


def servers_page_entries(
    principal, *, after: str | None, limit: int, base_url: str, exclude_ids=None, **filters
):
    """The rows of `servers_page` (at most `limit`, without the servers of `exclude_ids`, a queryset of
    ids), as `[(name, version, ServerResponse JSON text)]` built by PostgreSQL (servers/v01_sql.py) in one
    query, each `num_tools` the number of tools the caller is shown."""
    rows = servers_page_query(principal, after=after, **filters)
    if exclude_ids is not None:
        rows = rows.exclude(id__in=exclude_ids)
    chosen = rows.annotate(shown=shown_tool_count(principal)).values_list(*PAGE_FIELDS, "shown")[:limit]
    return servers_page_rows(chosen, base_url=base_url)


def health_snapshot(principal=None) -> dict[str, dict]:
    """`{path: entry}` (servers/live/entries.py) of the servers `principal` may see, with the number of
    tools it sees, or of the enabled servers when there is no principal (the public view)."""
    rows = Server.objects.visible_to(principal) if principal is not None else Server.objects.enabled()
    fields = ("path", "health_status", "last_checked_at", "num_tools", "health_detail", "is_enabled")
    entries = {path: health_entry(*entry) for path, *entry in rows.order_by("path").values_list(*fields)}
    if principal is None:
        return {path: public_entry(entry) for path, entry in entries.items()}
    for path, count in tool_counts(principal, entries).items():
        entries[path]["num_tools"] = count
    return entries


DISCOVERY_TOOLS_PREVIEW = 5


def servers_for_discovery() -> list[Server]:
    """Enabled servers for the public discovery document, each with `preview_tools` (at most 5, by
    name), in a fixed number of queries whatever the number of servers."""

    preview = Tool.objects.only("server_id", "name", "description").order_by("name")[:DISCOVERY_TOOLS_PREVIEW]
    return list(
        Server.objects.enabled()
        .for_listing()
        .order_by("path")
        .prefetch_related(Prefetch("tools", queryset=preview, to_attr="preview_tools"))
    )


def server_origins() -> dict[str, list[Server]]:
    """Every registered server (enabled or not) by the origin of its URL, `scheme://host:port`."""
    origins: dict[str, list[Server]] = {}
    for server in Server.objects.only("path", "proxy_pass_url").order_by("path"):
        parts = urlsplit(server.proxy_pass_url)
        origins.setdefault(f"{parts.scheme}://{parts.netloc}".lower(), []).append(server)
    return origins


def pending_tool_changes(server_ids: list[int]) -> dict[int, int]:
    """{server id: number of tool changes awaiting approval} of the given servers that have any (one
    query, for the dashboard's marks)."""
    if not server_ids:
        return {}
    rows = (
        ToolChange.objects.filter(server_id__in=server_ids, status=ToolChangeStatus.PENDING)
        .values("server_id")
        .annotate(count=Count("id"))
    )
    return {row["server_id"]: row["count"] for row in rows}


def tool_set_attestation(sha256: str) -> str | None:
    """The attestation of a server's pinned tool set of digest `sha256` (core/attestations.py), or None."""
    found = (
        Server.objects.filter(tool_set_digest=sha256)
        .exclude(tool_attestation="")
        .values_list("tool_attestation", flat=True)
        .first()
    )
    return found or None
