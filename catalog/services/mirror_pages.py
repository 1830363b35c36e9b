"""One page of a mirrored upstream: each entry checked as a publish is (catalog/documents.py) and as an
entry of the official API must be (its name outside this registry's namespace, a known status, readable
dates), then the page stored in one transaction. An entry that cannot be read, whatever the reason, is
counted and skipped with its reason; it never stops the page or the sync."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from fnmatch import fnmatchcase

from django.db import DatabaseError, connection, transaction
from django.utils.dateparse import parse_datetime

from catalog.choices import Status
from catalog.documents import OFFICIAL_META, document_problem
from catalog.models import STATUS_MESSAGE_MAX_LENGTH, ServerVersion, Upstream
from catalog.policies import gateway_name_refusal
from catalog.services.latest import latest_mark

MAX_FAILURES_KEPT = 50


@dataclass
class SyncReport:
    seen: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0  # left out by the upstream's include/exclude patterns
    failed: int = 0
    pages: int = 0
    stopped: str = ""  # why the sync stopped before the crawl's end (a bound), or ""
    failures: list[dict] = field(default_factory=list)

    def counts(self) -> tuple:
        return self.added, self.updated, self.unchanged, self.failed, len(self.failures)

    def restore(self, counts: tuple) -> None:
        """Back to `counts()` as it was before a page's transaction that rolled back."""
        self.added, self.updated, self.unchanged, self.failed, kept = counts
        del self.failures[kept:]

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


class Unreadable(ValueError):
    """An entry's field that cannot be read; `str()` names it and says why."""


def _time(official: dict, key: str, default: datetime | None) -> datetime | None:
    """`official[key]` as a UTC date-time, `default` when absent; Unreadable when it is not an RFC 3339
    date-time with a zone (`2026-02-30`), or none PostgreSQL can store once in UTC."""
    value = official.get(key)
    if value is None:
        return default
    shown = str(value)[:40]
    try:
        parsed = parse_datetime(value) if isinstance(value, str) else None
        if parsed is None or parsed.tzinfo is None:
            raise ValueError
        return parsed.astimezone(UTC)  # PostgreSQL refuses offsets beyond ±15:59, which RFC 3339 allows
    except (ValueError, OverflowError):
        raise Unreadable(f"_meta.{OFFICIAL_META}.{key} is not an RFC 3339 date-time: {shown!r}") from None


class PageStore:
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
        server = entry.get("server") if isinstance(entry, dict) else None
        name = server.get("name") if isinstance(server, dict) else None
        version = server.get("version") if isinstance(server, dict) else None
        try:
            updated = _time(official, "updatedAt", None)
            published = _time(official, "publishedAt", self.now)
            changed = _time(official, "statusChangedAt", self.now)
        except Unreadable as unreadable:
            report.fail(name, version, str(unreadable))
            return None
        # Every entry the upstream shows moves the watermark: one that fails here fails again until it
        # changes upstream, which gives it a newer `updatedAt`.
        if updated is not None and (self.newest is None or updated > self.newest):
            self.newest = updated
        if not isinstance(name, str) or not isinstance(version, str):
            report.fail(name, version, "not a ServerResponse: server.name and server.version are required")
            return None
        if not _wanted(self.upstream, name):
            report.skipped += 1
            return None
        if (refusal := gateway_name_refusal(name)) is not None:
            report.fail(name, version, refusal)
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
            "published_at": published,
            "status_changed_at": changed,
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
        before = report.counts()
        try:
            self._store(checked)
        except DatabaseError:  # one entry the database refuses: store the others one by one
            report.restore(before)
            for document, fields in checked:
                before = report.counts()
                try:
                    self._store([(document, fields)])
                except DatabaseError as error:
                    report.restore(before)
                    report.fail(document["name"], document["version"], f"could not be stored: {error}")

    def _store(self, checked: list[tuple[dict, dict]]) -> None:
        report = self.report
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
