"""Mirroring another registry's `/v0.1` API into this one.

A sync crawls the upstream's pages by cursor, each page stored in one transaction
(catalog/services/mirror_pages.py); the cursor of the next page is saved as each page commits, so a sync
killed halfway resumes there, and storing is idempotent (an entry already here as the upstream has it is
left alone), so a page read twice changes nothing. The first sync reads everything; later ones ask
`updated_since` the newest `updatedAt` the upstream has shown, with deleted versions included, so status
changes and deletions arrive.

Every sync ends, whatever the upstream does: each page is fetched by the one rule for outbound fetches
(core/outbound.py: a total deadline, a size bound), a sync stops after MIRROR_SYNC_MAX_PAGES pages,
MIRROR_SYNC_MAX_ENTRIES entries or MIRROR_SYNC_MAX_SECONDS (the next one resumes from the cursor), a
cursor the upstream already gave in this sync is a cycle, and a cursor it refuses (400) restarts the
crawl once. Why the last sync stopped is recorded on the upstream (`last_outcome`).

Mirrored versions keep the upstream's status; their `updatedAt` here is when they changed here, so
registries that mirror this one see them."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import timedelta
from urllib.parse import urlencode

from django.conf import settings
from django.db import connection
from django.utils import timezone

from catalog.models import Upstream
from catalog.services.mirror_pages import PageStore, SyncReport
from core.outbound import FetchFailed, fetch
from core.timestamps import rfc3339
from core.untrusted import InputRejected, json_loads

logger = logging.getLogger(__name__)

PAGE_LIMIT = 100
MAX_PAGE_BYTES = 32 * 1024 * 1024
MAX_BACKOFF_MINUTES = 24 * 60
# What a sync writes on its upstream (an operator may edit the others meanwhile).
SYNC_FIELDS = [
    "cursor",
    "crawl_since",
    "updated_watermark",
    "last_synced_at",
    "next_sync_at",
    "consecutive_failures",
    "last_error",
    "last_outcome",
    "seen",
    "added",
    "updated",
    "failed",
    "failures",
]


class UpstreamError(Exception):
    """The upstream could not be read: unreachable, an error status, not a page of the API, or a crawl
    that cannot end (a cursor cycle)."""


class SyncRunning(Exception):
    """Another process is syncing this upstream now."""


class _Client:
    def __init__(self, upstream: Upstream):
        self.base = upstream.url.rstrip("/")
        self.headers = {"Accept": "application/json"}
        if upstream.auth_header:
            self.headers["Authorization"] = upstream.auth_header

    def page(self, params: dict, *, deadline_seconds: float) -> dict | None:
        """The page of GET /v0.1/servers, None when the upstream no longer knows the cursor; UpstreamError
        when it cannot be read in time."""
        url = f"{self.base}/v0.1/servers?{urlencode(params)}"
        try:
            answer = fetch(
                url, deadline_seconds=deadline_seconds, max_bytes=MAX_PAGE_BYTES, headers=self.headers
            )
        except FetchFailed as failed:
            raise UpstreamError(f"{url}: {failed}"[:1000]) from None
        status, body = answer.status, answer.body
        if status == 400 and "cursor" in params:
            return None  # the upstream no longer knows the cursor: the crawl starts again
        if status != 200:
            raise UpstreamError(f"{url} answered {status}: {body[:300].decode('utf-8', 'replace')}")
        try:
            page = json_loads(body, "page", text=False)  # entries are checked one by one
        except InputRejected as rejected:
            raise UpstreamError(f"{url}: not JSON ({rejected.message})") from None
        if not isinstance(page, dict) or not isinstance(page.get("servers"), list):
            raise UpstreamError(f"{url}: not a ServerList (no servers array)")
        return page


def _hold_sync_lock(upstream: Upstream) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", [f"upstream:{upstream.pk}"])
        return cursor.fetchone()[0]


def _release_sync_lock(upstream: Upstream) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", [f"upstream:{upstream.pk}"])


def upstream_sync(
    upstream: Upstream, *, progress: Callable[[SyncReport], None] | None = None, page_limit: int = PAGE_LIMIT
) -> SyncReport:
    """Sync `upstream` once: resume a crawl under way, else ask what changed since the last sync (or
    everything, the first time). Records the outcome on the upstream, and on failure when to try again
    (backing off); raises UpstreamError then, SyncRunning when another process syncs it now."""
    if not _hold_sync_lock(upstream):
        raise SyncRunning(f"{upstream.name} is being synced by another process.")
    try:
        return _sync(upstream, progress, page_limit)
    finally:
        _release_sync_lock(upstream)


def _bound_reached(report: SyncReport, ends: float) -> str | None:
    """Why the sync stops before its next page, or None when it goes on."""
    if report.pages >= settings.MIRROR_SYNC_MAX_PAGES:
        return f"stopped after {report.pages} pages (MIRROR_SYNC_MAX_PAGES)"
    if report.seen >= settings.MIRROR_SYNC_MAX_ENTRIES:
        return f"stopped after {report.seen} entries (MIRROR_SYNC_MAX_ENTRIES)"
    if time.monotonic() >= ends:
        return f"stopped after {settings.MIRROR_SYNC_MAX_SECONDS} s (MIRROR_SYNC_MAX_SECONDS)"
    return None


def _sync(upstream: Upstream, progress, page_limit: int) -> SyncReport:
    started = timezone.now()
    ends = time.monotonic() + settings.MIRROR_SYNC_MAX_SECONDS
    report = SyncReport()
    if not upstream.cursor:  # a new crawl: from the last sync's watermark, or everything
        upstream.crawl_since = rfc3339(upstream.updated_watermark) if upstream.updated_watermark else ""
    upstream.last_started_at = started
    upstream.save(update_fields=["crawl_since", "last_started_at"])
    client = _Client(upstream)
    newest = upstream.updated_watermark
    cursors, restarted = set(), False
    try:
        while (stopped := _bound_reached(report, ends)) is None:
            params = {"limit": page_limit, "include_deleted": "true"}
            if upstream.crawl_since:
                params["updated_since"] = upstream.crawl_since
            if upstream.cursor:
                params["cursor"] = upstream.cursor
            remaining = max(ends - time.monotonic(), 0.1)
            try:
                page = client.page(
                    params, deadline_seconds=min(settings.MIRROR_PAGE_TIMEOUT_SECONDS, remaining)
                )
            except UpstreamError:
                if time.monotonic() < ends:
                    raise
                stopped = _bound_reached(report, ends)  # the sync's own time ran out during the page
                break
            if page is None:
                if restarted:
                    upstream.cursor = ""
                    raise UpstreamError("the upstream refused the cursor of its own first page (400)")
                restarted, upstream.cursor, cursors = True, "", set()
                upstream.save(update_fields=["cursor"])
                continue
            stored = PageStore(upstream, report, timezone.now())
            stored.store(page["servers"])
            if stored.newest is not None and (newest is None or stored.newest > newest):
                newest = stored.newest
            report.pages += 1
            next_cursor = (page.get("metadata") or {}).get("nextCursor")
            next_cursor = next_cursor if isinstance(next_cursor, str) and page["servers"] else ""
            if next_cursor and next_cursor in cursors:
                upstream.cursor = ""  # the next sync starts the crawl again
                raise UpstreamError(f"the upstream's cursors run in a cycle (after {report.pages} pages)")
            cursors.add(next_cursor)
            upstream.cursor = next_cursor
            upstream.save(update_fields=["cursor"])
            if progress is not None:
                progress(report)
            if not upstream.cursor:
                break
    except UpstreamError as error:
        _record_failure(upstream, report, str(error))
        raise
    except Exception as error:  # a defect must not pass for the upstream's fault, nor go unrecorded
        logger.exception("Sync of upstream %s failed", upstream.name)
        _record_failure(upstream, report, f"{type(error).__name__}: {error}"[:1000])
        raise UpstreamError(f"{type(error).__name__}: {error}"[:1000]) from error
    finished = timezone.now()
    upstream.last_synced_at = finished
    upstream.next_sync_at = finished + timedelta(minutes=upstream.interval_minutes)
    upstream.consecutive_failures = 0
    upstream.last_error = ""
    if stopped is None:  # the crawl ended: later syncs ask what changed since the newest entry seen
        upstream.updated_watermark = newest
        upstream.crawl_since = ""
        upstream.last_outcome = f"complete: {report.pages} pages"
    else:  # a bound: the cursor stays, the next sync resumes from it
        upstream.last_outcome = f"{stopped}; the next sync resumes from the cursor"
    report.stopped = stopped or ""
    _record_counts(upstream, report)
    upstream.save(update_fields=SYNC_FIELDS)
    return report


def _record_counts(upstream: Upstream, report: SyncReport) -> None:
    upstream.seen, upstream.added, upstream.updated = report.seen, report.added, report.updated
    upstream.failed, upstream.failures = report.failed, report.failures


def _record_failure(upstream: Upstream, report: SyncReport, error: str) -> None:
    """Keep the cursor (the next attempt resumes there) and back off: 1, 2, 4… minutes, at most the
    upstream's interval (or a day)."""
    upstream.consecutive_failures += 1
    upstream.last_error = error
    upstream.last_outcome = f"failed after {report.pages} pages"
    delay = min(
        2 ** (upstream.consecutive_failures - 1), max(upstream.interval_minutes, 1), MAX_BACKOFF_MINUTES
    )
    upstream.next_sync_at = timezone.now() + timedelta(minutes=delay)
    _record_counts(upstream, report)
    upstream.save(update_fields=SYNC_FIELDS)
    logger.warning(
        "Sync of upstream %s failed (%s in a row): %s", upstream.name, upstream.consecutive_failures, error
    )
