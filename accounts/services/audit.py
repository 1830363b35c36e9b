"""The audit trail: one append-only row per mutation, written inside the mutation's transaction, and
linked into the audit chain once that transaction commits (accounts/services/audit_chain.py)."""

from django.db import transaction

from accounts.choices import AuditAction
from accounts.models import AuditEvent, User
from accounts.services.audit_chain import audit_chain_extend

SYSTEM_ACTOR = "system"


def actor_user(actor) -> User | None:
    """The local user behind an actor (a User, a Principal, or None for the system)."""
    if actor is None or not actor.is_authenticated:
        return None
    return actor if isinstance(actor, User) else getattr(actor, "user", None)


def audit_event_record(*, actor, action: AuditAction, target: str, detail: dict | None = None):
    """Append one audit row. Called by every service that mutates, inside its transaction.

    `actor` is a User, a Principal (a caller known by a token, possibly without a local user) or None
    for the system itself."""
    authenticated = actor is not None and actor.is_authenticated
    _chained_on_commit()  # it joins the chain once it is committed
    return AuditEvent.objects.create(
        actor=actor_user(actor),
        actor_name=actor.get_username() if authenticated else SYSTEM_ACTOR,
        action=action,
        target=target,
        detail=detail or {},
    )


def _chained_on_commit() -> None:
    """Link the transaction's audit rows into the chain once it commits: one linking for all of them,
    however many rows the transaction writes (an import of a thousand scopes links once)."""
    connection = transaction.get_connection()
    active = set(connection.savepoint_ids)
    if connection.in_atomic_block and any(  # one already waits, in a savepoint this row is inside of
        callback is audit_chain_extend and savepoints <= active
        for savepoints, callback, _ in connection.run_on_commit
    ):
        return
    transaction.on_commit(audit_chain_extend, robust=True)
