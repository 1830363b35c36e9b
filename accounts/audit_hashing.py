"""The audit chain's one hashing rule: a row's hash is the sha256 of its canonical JSON (keys sorted, no
spaces, UTF-8) holding its place in the chain, what it records and the previous row's hash. The chain's
writer (accounts/services/audit_chain.py) and its verifier (accounts/audit_verify.py) both use it, and
docs/observability.md states it so anyone can recompute a hash from an export."""

from __future__ import annotations

import hashlib
import json

GENESIS = "0" * 64  # what the first row of the chain links to


def canonical(row, seq: int, prev_hash: str) -> bytes:
    """`row`: an AuditEvent, or anything with its fields."""
    document = {
        "seq": seq,
        "id": row.id,
        "created_at": row.created_at.isoformat(timespec="microseconds"),
        "actor_id": row.actor_id,
        "actor_name": row.actor_name,
        "action": row.action,
        "target": row.target,
        "detail": row.detail,
        "prev_hash": prev_hash,
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def row_hash(row, seq: int, prev_hash: str) -> str:
    return hashlib.sha256(canonical(row, seq, prev_hash)).hexdigest()
