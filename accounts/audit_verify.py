"""Reading the audit chain back (`manage.py audit_verify`): every row's hash recomputed by the one rule
(accounts/audit_hashing.py), every link followed, every checkpoint's signature checked against the
attestation keys and its row's hash. The first row that does not verify is named, by what is wrong:

- a row whose hash is not its content's: it was edited (or moved: its place is part of what is hashed);
- a place in the chain with no row, or a row whose predecessor is not the one it was chained after: a row
  was deleted;
- a checkpoint past the last row: the tail was cut; a checkpoint whose row's hash differs: the chain was
  rewritten since it was signed;
- rows before the first kept with no retention checkpoint to link to: the head was cut."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from accounts.audit_hashing import GENESIS, row_hash
from accounts.models import AuditCheckpoint, AuditEvent
from core import attestations

PROGRESS_EVERY = 100_000


@dataclass(frozen=True)
class ChainVerdict:
    rows: int
    checkpoints: int
    unchained: int  # committed rows waiting to be linked (the next write or the beat links them)
    problem: str = ""
    row_id: int | None = None

    @property
    def ok(self) -> bool:
        return not self.problem


def audit_chain_verified(progress: Callable[[int], None] | None = None) -> ChainVerdict:
    checkpoints = list(AuditCheckpoint.objects.order_by("chain_seq", "id"))
    unchained = AuditEvent.objects.filter(chain_seq__isnull=True).count()
    counted = {"rows": 0, "checkpoints": len(checkpoints), "unchained": unchained}
    for checkpoint in checkpoints:
        claims = attestations.verified(checkpoint.signature)
        if claims is None or (claims.get("seq"), claims.get("row_hash")) != (
            checkpoint.chain_seq,
            checkpoint.row_hash,
        ):
            return ChainVerdict(
                **counted, problem=f"The checkpoint of #{checkpoint.chain_seq} is not signed by the registry."
            )
    signed = {c.chain_seq: c for c in checkpoints if c.kind == AuditCheckpoint.Kind.SCHEDULED}
    retained = {c.chain_seq: c for c in checkpoints if c.kind == AuditCheckpoint.Kind.RETENTION}
    rows = AuditEvent.objects.filter(chain_seq__isnull=False).order_by("chain_seq")
    link_break, previous = None, None
    for row in rows.iterator(chunk_size=2000):
        counted["rows"] += 1
        if progress is not None and counted["rows"] % PROGRESS_EVERY == 0:
            progress(counted["rows"])
        if row_hash(row, row.chain_seq, row.prev_hash) != row.row_hash:
            return ChainVerdict(
                **counted,
                problem=f"Row {row.id} (#{row.chain_seq}, {row.action} {row.target}) is not what was "
                "written: it was changed or moved.",
                row_id=row.id,
            )
        if link_break is None:
            link_break = _link_problem(row, previous, retained)
        previous = row
        checkpoint = signed.get(row.chain_seq)
        if link_break is None and checkpoint is not None and checkpoint.row_hash != row.row_hash:
            link_break = (
                row.id,
                f"Row {row.id} (#{row.chain_seq}) differs from the checkpoint signed for it: the "
                "chain was rewritten.",
            )
    if link_break is not None:
        return ChainVerdict(**counted, problem=link_break[1], row_id=link_break[0])
    last = previous.chain_seq if previous is not None else max(retained, default=0)
    beyond = [
        checkpoint
        for checkpoint in checkpoints
        if checkpoint.chain_seq > last and checkpoint.kind == AuditCheckpoint.Kind.SCHEDULED
    ]
    if beyond:
        return ChainVerdict(
            **counted,
            problem=f"The chain ends at #{last} but the registry signed #{beyond[-1].chain_seq}: rows "
            f"after #{last} were removed.",
        )
    return ChainVerdict(**counted)


def _link_problem(row, previous, retained: dict) -> tuple[int, str] | None:
    """Why `row` does not follow `previous` (the row before it by place), or None."""
    if previous is None:
        expected_seq, expected_hash = 1, GENESIS
        before = retained.get(row.chain_seq - 1)
        if row.chain_seq != 1:
            if before is None:
                return row.id, (
                    f"Rows #1 to #{row.chain_seq - 1} are gone with no retention checkpoint: the chain's "
                    f"head was cut before row {row.id}."
                )
            expected_seq, expected_hash = row.chain_seq, before.row_hash
    else:
        expected_seq, expected_hash = previous.chain_seq + 1, previous.row_hash
    if row.chain_seq != expected_seq:
        return row.id, (
            f"#{expected_seq} is missing: row {row.id} (#{row.chain_seq}) follows #{expected_seq - 1}. A "
            "row was deleted."
        )
    if row.prev_hash != expected_hash:
        return (
            row.id,
            f"Row {row.id} (#{row.chain_seq}) does not link to the row before it: a row was replaced.",
        )
    return None
