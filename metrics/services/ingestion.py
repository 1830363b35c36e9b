"""Accepting a batch (validate, buffer, count) and flushing the buffer to the database."""

import logging
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.db import DatabaseError, transaction

from metrics import buffer
from metrics.models import METRIC_TABLES, TABLE_OF_TYPE, ApiKey
from metrics.validation import validate_batch

logger = logging.getLogger(__name__)

FLUSH_BATCHES = 200  # buffered batches stored per hand-off
FLUSH_TIME_BUDGET_SECONDS = 4.0  # stop taking new hand-offs after this, so flushes do not pile up

# The typed columns of each table, filled from the validated dimensions of the same names.
TYPED_COLUMNS = {
    "auth_metrics": ("success", "method", "server", "user_hash"),
    "tool_execution_metrics": (
        "method",
        "tool_name",
        "client_name",
        "success",
        "input_size_bytes",
        "output_size_bytes",
    ),
    "discovery_metrics": (
        "query",
        "results_count",
        "top_k",
        "top_n",
        "embedding_time_ms",
        "search_time_ms",
    ),
    "protocol_latency_metrics": ("flow_step",),
    "generic_metrics": (),
}


@dataclass
class IngestResult:
    accepted: int
    errors: list[dict] = field(default_factory=list)

    @property
    def rejected(self) -> int:
        return len(self.errors)


def metrics_ingest(*, key: ApiKey, body) -> IngestResult:
    """Validate a batch sent with `key` and buffer what is valid (raises `BatchError` for a batch that
    is unusable as a whole). Accepted metrics are in Redis when this returns."""
    result = validate_batch(body, service=key.service)
    if result.accepted:
        buffer.push(result.accepted)
    return IngestResult(accepted=len(result.accepted), errors=result.errors)


def metrics_flush(*, lease_seconds: float = buffer.LEASE_SECONDS) -> int:
    """Store buffered metrics: first the hand-offs of flushers that died, then new ones until the
    buffer is empty or the time budget is spent. Returns how many metrics were stored."""
    stored = 0
    for name in buffer.stale(lease_seconds=lease_seconds):
        logger.warning("recovering metrics a previous flush left in %s", name)
        stored += _store_and_release(name)
    started = time.monotonic()
    while time.monotonic() - started < FLUSH_TIME_BUDGET_SECONDS:
        name = buffer.take(FLUSH_BATCHES, lease_seconds=lease_seconds)
        if name is None:
            break
        stored += _store_and_release(name)
    return stored


def _store_and_release(name: str) -> int:
    stored = rows_store(buffer.records_of(name))
    buffer.release(name)
    return stored


def rows_store(records: list[dict]) -> int:
    """Insert validated metrics, each once: a metric already stored (same id) is skipped.

    All at once when the database takes them; otherwise one by one, each in its own savepoint, and a
    row the database refuses goes to the dead-letter list (counted, logged) instead of failing the
    others: a poison metric never holds back a valid one. Returns how many were stored."""
    rows, stored = [], 0
    for record in records:
        try:
            rows.append((record, _row(TABLE_OF_TYPE[record["type"]], record)))
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            buffer.dead_letter(record, reason=f"not a metric row: {exc}")
    by_table = defaultdict(list)
    for _, row in rows:
        by_table[type(row)].append(row)
    try:
        with transaction.atomic():
            for model, table_rows in by_table.items():
                model.objects.bulk_create(table_rows, ignore_conflicts=True, batch_size=1000)
        return len(rows)
    except DatabaseError:
        logger.warning("a hand-off of %d metrics was refused; storing them one by one", len(rows))
    for record, row in rows:
        try:
            with transaction.atomic():
                type(row).objects.bulk_create([row], ignore_conflicts=True)
            stored += 1
        except DatabaseError as exc:
            buffer.dead_letter(record, reason=str(exc).strip().splitlines()[0])
    return stored


def _row(table: str, record: dict):
    dimensions = record["dimensions"]
    fields = {
        "id": uuid.UUID(record["id"]),
        "service": record["service"],
        "version": record.get("version", ""),
        "timestamp": datetime.fromtimestamp(record["timestamp"], UTC),
        "value": record["value"],
        "duration_ms": record["duration_ms"],
        "dimensions": dimensions,
        "metadata": record.get("metadata") or {},
    }
    for column in TYPED_COLUMNS[table]:
        value = dimensions.get(column)
        fields[column] = "" if value is None and column in _TEXT_COLUMNS else value
    if table == "generic_metrics":
        fields["type"] = record["type"]
    return METRIC_TABLES[table](**fields)


_TEXT_COLUMNS = {"server", "user_hash", "tool_name", "client_name", "query"}
