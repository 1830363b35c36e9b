"""The audit chain's writes: rows join it in the order they are chained, after their transaction commits,
so no business transaction holds the chain; signed checkpoints; retention by age that keeps the chain
verifiable.

- `audit_chain_extend` takes the chain's lock (one PostgreSQL advisory lock, held for a short transaction
  of its own), reads the last chained row, and links every committed row not chained yet, by id. Every
  audited write asks for it when its transaction commits; the beat catches what a process that died
  between its commit and that call left (nothing is lost: the row is committed, only unchained).
- `audit_checkpoint_write` signs the last chained row's hash with the attestation key (core/attestations.py),
  which the database does not hold: a chain rewritten in the database no longer matches it.
- `audit_retention_apply` removes the chain's oldest rows, up to the first younger than
  AUDIT_RETENTION_DAYS, after signing a checkpoint of the last row it removes: the first kept row links to
  that hash."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from accounts.audit_hashing import GENESIS, row_hash
from accounts.models import AuditCheckpoint, AuditEvent
from core import attestations
from core.timestamps import rfc3339

CHAIN_LOCK = 0x61756469  # "audi": the one writer of the chain at a time, across processes and hosts
BATCH = 1000


def _locked() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [CHAIN_LOCK])


def _last() -> tuple[int, str]:
    last = AuditEvent.objects.filter(chain_seq__isnull=False).order_by("-chain_seq")
    found = last.values_list("chain_seq", "row_hash").first()
    if found is not None:
        return found
    checkpoint = AuditCheckpoint.objects.filter(kind=AuditCheckpoint.Kind.RETENTION).first()
    return (checkpoint.chain_seq, checkpoint.row_hash) if checkpoint else (0, GENESIS)


def audit_chain_extend() -> int:
    """Link every committed row not chained yet; how many were linked."""
    linked = 0
    while True:
        with transaction.atomic():
            _locked()
            seq, prev = _last()
            rows = list(AuditEvent.objects.filter(chain_seq__isnull=True).order_by("id")[:BATCH])
            for row in rows:
                seq += 1
                digest = row_hash(row, seq, prev)
                AuditEvent.objects.chain_link(row.pk, seq=seq, prev_hash=prev, digest=digest)
                prev = digest
        linked += len(rows)
        if len(rows) < BATCH:
            return linked


def _signed(seq: int, digest: str, kind: str) -> AuditCheckpoint:
    claims = {
        "sub": "audit-chain",
        "seq": seq,
        "row_hash": digest,
        "kind": kind,
        "at": rfc3339(timezone.now()),
    }
    return AuditCheckpoint.objects.create(
        chain_seq=seq, row_hash=digest, kind=kind, signature=attestations.sign(claims)
    )


def audit_checkpoint_write() -> AuditCheckpoint | None:
    """A signed checkpoint of the chain's last row (None while the chain is empty, or when the last
    checkpoint already holds that row)."""
    audit_chain_extend()
    with transaction.atomic():
        _locked()
        seq, digest = _last()
        if seq == 0:
            return None
        latest = AuditCheckpoint.objects.first()
        if latest is not None and latest.chain_seq == seq:
            return None
        return _signed(seq, digest, AuditCheckpoint.Kind.SCHEDULED)


def audit_retention_apply() -> int:
    """Remove chained rows older than AUDIT_RETENTION_DAYS (0: keep every row); how many were removed."""
    days = settings.AUDIT_RETENTION_DAYS
    if days <= 0:
        return 0
    audit_chain_extend()
    cutoff = timezone.now() - timedelta(days=days)
    with transaction.atomic():
        _locked()
        chained = AuditEvent.objects.filter(chain_seq__isnull=False)
        kept = (
            chained.filter(created_at__gte=cutoff).order_by("chain_seq").values_list("chain_seq", flat=True)
        )
        first_kept = kept.first()
        prefix = chained if first_kept is None else chained.filter(chain_seq__lt=first_kept)
        last_removed = prefix.order_by("-chain_seq").values_list("chain_seq", "row_hash").first()
        if last_removed is None:
            return 0
        _signed(*last_removed, AuditCheckpoint.Kind.RETENTION)
        return prefix.retention_remove()  # the chain's prefix only: a kept row keeps its predecessor's link
