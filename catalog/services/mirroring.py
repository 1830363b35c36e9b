"""Mirroring another registry's `/v0.1` API into this one.

A sync crawls the upstream's pages by cursor, each page stored in one transaction; the cursor of the
next page is saved as each page commits, so a sync killed halfway resumes there, and storing is
idempotent (an entry already here as the upstream has it is left alone), so a page read twice changes
nothing. The first sync reads everything; later ones ask `updated_since` the newest `updatedAt` the
upstream has shown, with deleted versions included, so status changes and deletions arrive.

Every entry is checked as a publish is (catalog/documents.py); one that fails is counted and skipped
with its reason, never stored half. A name published here, or mirrored from another upstream, is never
overwritten. Mirrored versions keep the upstream's status; their `updatedAt` here is when they changed
here, so registries that mirror this one see them."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from fnmatch import fnmatchcase

import requests
from django.db import connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from catalog.choices import Status
from catalog.documents import OFFICIAL_META, document_problem
from catalog.models import STATUS_MESSAGE_MAX_LENGTH, ServerVersion, Upstream
from catalog.services.latest import latest_mark
from core.untrusted import InputRejected, json_loads
from servers.naming import name_prefix

logger = logging.getLogger(__name__)

PAGE_LIMIT = 100
TIMEOUT_SECONDS = 30
MAX_PAGE_BYTES = 32 * 1024 * 1024
MAX_FAILURES_KEPT = 50
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
    "seen",
    "added",
    "updated",
    "failed",
    "failures",
]


class UpstreamError(Exception):
    """The upstream could not be read: unreachable, an error status, or not a page of the API."""


class SyncRunning(Exception):
    """Another process is syncing this upstream now."""


@dataclass
class SyncReport:
    seen: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0  # left out by the upstream's include/exclude patterns
    failed: int = 0
    pages: int = 0
    failures: list[dict] = field(default_factory=list)

    def fail(self, name, version, reason: str) -> None:
        self.failed += 1
        if len(self.failures) < MAX_FAILURES_KEPT:
            self.failures.append(
                {"name": str(name)[:200], "version": str(version)[:255], "reason": reason[:500]}
            )


def _wanted(upstream: Upstream, name: str) -> bool:
    if upstream.include and not any(fnmatchcase(name, pattern) for pattern in upstream.include):
        return False
    return not any(fnmatchcase(name, pattern) for pattern in upstream.exclude)


def _time(value, default: datetime) -> datetime:
    parsed = parse_datetime(value) if isinstance(value, str) else None
    return parsed if parsed is not None and parsed.tzinfo is not None else default


class _Page:
    """One page's entries, checked and stored in one transaction."""

    def __init__(self, upstream: Upstream, report: SyncReport, now: datetime):
        self.upstream, self.report, self.now = upstream, report, now
        self.newest: datetime | None = None

    def _checked(self, entry) -> tuple[dict, dict] | None:
        """(document, fields of the row) of an entry, or None when it is skipped or fails."""
        report = self.report
        meta = entry.get("_meta") if isinstance(entry, dict) else None
        official = meta.get(OFFICIAL_META) if isinstance(meta, dict) else None
        official = official if isinstance(official, dict) else {}
        # Every entry the upstream shows moves the watermark: one that fails here fails again until it
        # changes upstream, which gives it a newer `updatedAt`.
        updated = _time(official.get("updatedAt"), None)
        if updated is not None and (self.newest is None or updated > self.newest):
            self.newest = updated
        server = entry.get("server") if isinstance(entry, dict) else None
        name = server.get("name") if isinstance(server, dict) else None
        version = server.get("version") if isinstance(server, dict) else None
        if not isinstance(name, str) or not isinstance(version, str):
            report.fail(name, version, "not a ServerResponse: server.name and server.version are required")
            return None
        if not _wanted(self.upstream, name):
            report.skipped += 1
            return None
        if name.startswith(name_prefix()):
            report.fail(name, version, f"names under {name_prefix()} are this registry's own gateway servers")
            return None
        if (problem := document_problem(server)) is not None:
            report.fail(name, version, problem)
            return None
        status = official.get("status", Status.ACTIVE)
        if status not in Status.values:
            report.fail(name, version, f"unknown status {str(status)[:50]!r}")
            return None
        message = official.get("statusMessage") if isinstance(official.get("statusMessage"), str) else ""
        return server, {
            "status": status,
            "status_message": message[:STATUS_MESSAGE_MAX_LENGTH],
            "published_at": _time(official.get("publishedAt"), self.now),
            "status_changed_at": _time(official.get("statusChangedAt"), self.now),
        }

    def store(self, entries: list) -> None:
        report = self.report
        checked = []
        for entry in entries:
            report.seen += 1
            if (result := self._checked(entry)) is not None:
                checked.append(result)
        if not checked:
            return
        names = sorted({document["name"] for document, _ in checked})
        with transaction.atomic():
            with connection.cursor() as cursor:  # the locks publishes take, in one order
                cursor.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended('catalog:' || n, 0)) "
                    "FROM unnest(%s::text[]) n",
                    [names],
                )
            existing = {(row.name, row.version): row for row in ServerVersion.objects.filter(name__in=names)}
            owners = {}
            for row in existing.values():
                if row.upstream_id != self.upstream.id:
                    owners.setdefault(row.name, row)
            created, changed, touched = [], [], set()
            for document, fields in checked:
                name, version = document["name"], document["version"]
                if (owner := owners.get(name)) is not None:
                    where = (
                        "published here" if owner.upstream_id is None else "mirrored from another upstream"
                    )
                    report.fail(name, version, f"{name} is {where}")
                    continue
                row = existing.get((name, version))
                if row is None:
                    row = ServerVersion(
                        name=name,
                        version=version,
                        document=document,
                        description=document.get("description", ""),
                        updated_at=self.now,
                        upstream=self.upstream,
                        synced_at=self.now,
                        **fields,
                    )
                    created.append(row)
                    existing[(name, version)] = row
                    report.added += 1
                elif (row.document, row.status, row.status_message) != (
                    document,
                    fields["status"],
                    fields["status_message"],
                ):
                    row.document, row.description = document, document.get("description", "")
                    row.status, row.status_message = fields["status"], fields["status_message"]
                    row.status_changed_at = fields["status_changed_at"]
                    row.updated_at = row.synced_at = self.now
                    row.embedding_dirty = True
                    changed.append(row)
                    report.updated += 1
                else:
                    report.unchanged += 1
                    continue
                touched.add(name)
            ServerVersion.objects.bulk_create(created)
            ServerVersion.objects.bulk_update(
                changed,
                [
                    "document",
                    "description",
                    "status",
                    "status_message",
                    "status_changed_at",
                    "updated_at",
                    "synced_at",
                    "embedding_dirty",
                ],
            )
            latest_mark([row for row in existing.values() if row.name in touched])


class _Client:
    def __init__(self, upstream: Upstream):
        self.base = upstream.url.rstrip("/")
        self.session = requests.Session()
        self.session.headers["Accept"] = "application/json"
        if upstream.auth_header:
            self.session.headers["Authorization"] = upstream.auth_header

    def page(self, params: dict) -> tuple[int, dict | None]:
        """(status, the page) of GET /v0.1/servers; UpstreamError when it cannot be read."""
        url = f"{self.base}/v0.1/servers"
        try:
            with self.session.get(
                url, params=params, timeout=TIMEOUT_SECONDS, allow_redirects=False, stream=True
            ) as response:
                body = response.raw.read(MAX_PAGE_BYTES + 1, decode_content=True)
                status = response.status_code
        except requests.RequestException as exc:
            raise UpstreamError(f"{url}: {type(exc).__name__}: {exc}"[:1000]) from None
        if status == 400 and "cursor" in params:
            return status, None  # the upstream no longer knows the cursor: the crawl starts again
        if status != 200:
            raise UpstreamError(f"{url} answered {status}: {body[:300].decode('utf-8', 'replace')}")
        if len(body) > MAX_PAGE_BYTES:
            raise UpstreamError(f"{url}: a page larger than {MAX_PAGE_BYTES // (1024 * 1024)} MiB")
        try:
            page = json_loads(body, "page", text=False)  # entries are checked one by one
        except InputRejected as rejected:
            raise UpstreamError(f"{url}: not JSON ({rejected.message})") from None
        if not isinstance(page, dict) or not isinstance(page.get("servers"), list):
            raise UpstreamError(f"{url}: not a ServerList (no servers array)")
        return status, page


def _iso(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


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


def _sync(upstream: Upstream, progress, page_limit: int) -> SyncReport:
    started = timezone.now()
    report = SyncReport()
    if not upstream.cursor:  # a new crawl: from the last sync's watermark, or everything
        upstream.crawl_since = _iso(upstream.updated_watermark) if upstream.updated_watermark else ""
    upstream.last_started_at = started
    upstream.save(update_fields=["crawl_since", "last_started_at"])
    client = _Client(upstream)
    newest = upstream.updated_watermark
    try:
        while True:
            params = {"limit": page_limit, "include_deleted": "true"}
            if upstream.crawl_since:
                params["updated_since"] = upstream.crawl_since
            if upstream.cursor:
                params["cursor"] = upstream.cursor
            status, page = client.page(params)
            if page is None:
                upstream.cursor = ""
                upstream.save(update_fields=["cursor"])
                continue
            stored = _Page(upstream, report, timezone.now())
            stored.store(page["servers"])
            if stored.newest is not None and (newest is None or stored.newest > newest):
                newest = stored.newest
            report.pages += 1
            next_cursor = (page.get("metadata") or {}).get("nextCursor")
            upstream.cursor = next_cursor if isinstance(next_cursor, str) and page["servers"] else ""
            upstream.save(update_fields=["cursor"])
            if progress is not None:
                progress(report)
            if not upstream.cursor:
                break
    except UpstreamError as error:
        _record_failure(upstream, report, str(error))
        raise
    finished = timezone.now()
    upstream.updated_watermark = newest
    upstream.crawl_since = ""
    upstream.last_synced_at = finished
    upstream.next_sync_at = finished + timedelta(minutes=upstream.interval_minutes)
    upstream.consecutive_failures = 0
    upstream.last_error = ""
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
    delay = min(
        2 ** (upstream.consecutive_failures - 1), max(upstream.interval_minutes, 1), MAX_BACKOFF_MINUTES
    )
    upstream.next_sync_at = timezone.now() + timedelta(minutes=delay)
    _record_counts(upstream, report)
    upstream.save(update_fields=SYNC_FIELDS)
    logger.warning(
        "Sync of upstream %s failed (%s in a row): %s", upstream.name, upstream.consecutive_failures, error
    )
