"""One /v0.1 page over every kind of entry: the gateway's servers and virtual servers
(`io.<namespace>/<path>`, one version each, those the caller may see) and the versions published or
mirrored here (every caller sees them), in one order: name, then version, compared as bytes. Each kind
is read by its own keyset query (servers/v01_sql.py, virtual_servers/listing.py, catalog/listing_sql.py)
and the three are merged.

A gateway server's name orders exactly as its path does (`/` becomes `.`, which sorts just below it,
and paths hold no `.`), so a cursor's name converts into a path bound for the servers' query; published
names never fall under the gateway's prefix (catalog/services/publishing.py)."""

import heapq
from itertools import islice

from catalog.listing_sql import versions_page_rows
from catalog.models import GatewayBinding, ServerVersion
from catalog.selectors import stored_sizes, versions_page_query, within_answer_budget
from core.epochs import EPOCH_CACHE_TTL_SECONDS
from servers.cache import LISTING_CHECK_LAG_SECONDS, LISTINGS
from servers.naming import name_prefix
from servers.selectors import servers_page_entries
from virtual_servers.listing import registry_entries
from virtual_servers.models import VirtualServer

PAGE_CACHE_MAX_CHARS = 256 * 1024  # larger pages (limit up to 1000) are built each time


def _servers_after(after: tuple[str, str] | None) -> tuple[str | None, bool]:
    """(the path the gateway's servers start after, whether none of them can follow `after` at all)."""
    if after is None:
        return None, False
    name, prefix = after[0], name_prefix()
    if name.startswith(prefix):
        return "/" + name[len(prefix) :].replace(".", "/"), False
    return None, name > prefix  # every gateway name starts with the prefix


def _catalog_facts() -> tuple[list[int], bool, bool]:
    """(ids of the servers put behind the gateway, whether any version is stored, whether any virtual
    server exists), kept with the pages: every write that changes one of them moves the listings' epoch.
    A registry without published versions or virtual servers then pays nothing for them on a page it
    builds: its page of servers is one query."""

    def build():
        bound = list(GatewayBinding.objects.values_list("server_id", flat=True))
        return bound, ServerVersion.objects.exists(), VirtualServer.objects.exists()

    return LISTINGS.get_or_build(("v01-catalog-facts",), build, ttl_seconds=EPOCH_CACHE_TTL_SECONDS)


def registry_page(
    principal,
    *,
    after: tuple[str, str] | None,
    limit: int,
    base_url: str,
    search: str = "",
    updated_since=None,
    version: str | None = None,
    include_deleted: bool = False,
):
    """One page as the JSON text of its ServerResponse list; returns (json_text, shown, last (name,
    version) shown, more_after_these).

    Pages are kept per process for each view of the servers and their tools (principals who see the same
    servers and are shown the same tools share them) until a server or a version changes
    (servers/cache.LISTINGS), at most LISTING_CHECK_LAG_SECONDS."""
    sees_all, paths = principal.server_visibility()
    filters = {"search": search, "updated_since": updated_since, "version": version}
    key = (
        "v01",
        sees_all or paths,
        principal.tools_view(),
        base_url,
        after,
        limit,
        include_deleted,
        *sorted(filters.items()),
    )

    def build():
        servers_after, no_servers = _servers_after(after)
        bound, any_versions, any_virtuals = _catalog_facts()
        servers = (
            []
            if no_servers
            else servers_page_entries(
                principal,
                after=servers_after,
                limit=limit + 1,
                base_url=base_url,
                exclude_ids=bound or None,  # listed under their published names, not their paths
                **filters,
            )
        )
        virtuals = (
            []
            if no_servers or not any_virtuals
            else registry_entries(
                principal, after=servers_after, limit=limit + 1, base_url=base_url, **filters
            )
        )
        versions, cut = [], False
        if any_versions:
            chosen = versions_page_query(after=after, include_deleted=include_deleted, **filters)
            sizes = stored_sizes(chosen[: limit + 1])
            ids = within_answer_budget(sizes)  # (the servers' entries are small and bounded)
            versions = versions_page_rows(ids, base_url=base_url)
            cut = len(ids) < len(sizes)
        merged = heapq.merge(servers, virtuals, versions, key=lambda row: (row[0], row[1]))
        rows = list(islice(merged, limit + 1))
        if cut:  # the answer's budget ended the versions: the page ends at the last one that fits
            last_fitting = (versions[-1][0], versions[-1][1])
            rows = [row for row in rows if (row[0], row[1]) <= last_fitting]
        shown = rows[:limit]
        last = (shown[-1][0], shown[-1][1]) if shown else None
        more = len(rows) > limit or cut
        return "[" + ",".join(row[2] for row in shown) + "]", len(shown), last, more

    return LISTINGS.get_or_build(
        key,
        build,
        ttl_seconds=LISTING_CHECK_LAG_SECONDS,
        keep=lambda page: len(page[0]) <= PAGE_CACHE_MAX_CHARS,
    )
