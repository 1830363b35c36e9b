"""Reads of published and mirrored versions. Every caller of /v0.1 sees them (docs/api.md): they
describe servers; reaching one through the gateway is what access rules decide."""

from datetime import datetime

from django.conf import settings
from django.db.models import F, Func, IntegerField, Q, TextField, Value
from django.db.models.functions import Cast

from catalog.choices import Status
from catalog.models import GatewayBinding, ServerVersion, Upstream
from servers.models import Server
from servers.search_index import TRIGRAM, trigrams

LATEST = "latest"


def _search(rows, search: str):
    if len(search) >= TRIGRAM:
        wanted = trigrams("servers_trigrams", Value(search))
        rows = rows.alias(
            name_trigrams=trigrams("servers_trigrams", F("name")),
            description_trigrams=trigrams("servers_trigrams", F("description")),
        ).filter(Q(name_trigrams__contains=wanted) | Q(description_trigrams__contains=wanted))
    return rows.filter(Q(name__icontains=search) | Q(description__icontains=search))


def versions_page_query(
    *,
    after: tuple[str, str] | None,
    search: str = "",
    updated_since: datetime | None = None,
    version: str | None = None,
    include_deleted: bool = False,
):
    """The versions matching the filters after the cursor `(name, version)`, by name and version."""
    rows = ServerVersion.objects.order_by("name", "version")
    if not include_deleted:
        rows = rows.exclude(status=Status.DELETED)
    if version == LATEST:
        rows = rows.filter(is_latest=True)
    elif version:
        rows = rows.filter(version=version)
    if updated_since is not None:
        rows = rows.filter(updated_at__gte=updated_since)
    if search:
        rows = _search(rows, search)
    if after is not None:
        rows = rows.filter(Q(name__gt=after[0]) | Q(name=after[0], version__gt=after[1]))
    return rows


def within_answer_budget(sizes: list[tuple[int, int]]) -> list[int]:
    """The ids of `[(id, stored size)]`, in order, that fit in REGISTRY_MAX_ANSWER_BYTES (the first one
    always does): the one bound on the bytes of a /v0.1 answer."""
    chosen, total = [], 0
    for pk, size in sizes:
        total += size or 0
        if chosen and total > settings.REGISTRY_MAX_ANSWER_BYTES:
            break
        chosen.append(pk)
    return chosen


def stored_sizes(rows) -> list[tuple[int, int]]:
    """`[(id, bytes of its document)]` of `rows`, without reading the documents into the process."""
    size = Func(Cast("document", TextField()), function="octet_length", output_field=IntegerField())
    return list(rows.annotate(stored=size).values_list("id", "stored"))


def versions_page(
    name: str, *, include_deleted: bool = False, after: tuple[str, int] | None = None, limit: int
) -> tuple[list[ServerVersion], bool]:
    """One page of the versions of `name`, the newest published first, after the (published_at, id) of
    the previous page's last; and whether more follow. A page ends early rather than pass the answer
    budget."""
    rows = ServerVersion.objects.filter(name=name).order_by("-published_at", "-id")
    if not include_deleted:
        rows = rows.exclude(status=Status.DELETED)
    if after is not None:
        published, pk = after
        rows = rows.filter(Q(published_at__lt=published) | Q(published_at=published, id__lt=pk))
    sizes = stored_sizes(rows[: limit + 1])
    chosen = within_answer_budget(sizes[:limit])
    page = (
        ServerVersion.objects.filter(id__in=chosen)
        .select_related("upstream")
        .order_by("-published_at", "-id")
    )
    return list(page), len(sizes) > len(chosen)


def version_of(name: str, version: str, *, include_deleted: bool = False) -> ServerVersion | None:
    """One version of `name`, or the latest one when `version` is "latest"."""
    rows = ServerVersion.objects.filter(name=name).select_related("upstream")
    rows = rows.filter(is_latest=True) if version == LATEST else rows.filter(version=version)
    if not include_deleted:
        rows = rows.exclude(status=Status.DELETED)
    return rows.first()


def gateway_server_of(name: str) -> Server | None:
    """The gateway server `name` was put behind, if it was."""
    binding = GatewayBinding.objects.filter(name=name).select_related("server").first()
    return binding.server if binding is not None else None


def name_is_published(name: str) -> bool:
    return ServerVersion.objects.filter(name=name).exists()


def upstreams_due(now: datetime) -> list[Upstream]:
    """Enabled upstreams whose next sync time has come (or that never synced)."""
    due = Upstream.objects.filter(is_enabled=True).filter(
        Q(next_sync_at__isnull=True) | Q(next_sync_at__lte=now)
    )
    return list(due.order_by("name"))


CATALOG_PAGE_SIZE = 50


def catalog_page(search: str = "", *, after: str | None = None, limit: int = CATALOG_PAGE_SIZE):
    """The latest version of each published or mirrored server (deleted ones left out), by name, after
    the name `after`, matching `search`; returns (rows, whether more follow). Each row carries its
    upstream and `gateway_path`, where it is behind the gateway (or None)."""
    rows = (
        ServerVersion.objects.filter(is_latest=True).exclude(status=Status.DELETED).select_related("upstream")
    )
    if search:
        rows = _search(rows, search)
    if after:
        rows = rows.filter(name__gt=after)
    page = list(rows.defer("embedding").order_by("name")[: limit + 1])
    bound = dict(
        GatewayBinding.objects.filter(name__in=[row.name for row in page]).values_list("name", "server__path")
    )
    for row in page:
        row.gateway_path = bound.get(row.name)
    return page[:limit], len(page) > limit
