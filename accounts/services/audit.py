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
    transaction.on_commit(audit_chain_extend, robust=True)  # it joins the chain once it is committed
    return AuditEvent.objects.create(
        actor=actor_user(actor),
        actor_name=actor.get_username() if authenticated else SYSTEM_ACTOR,
        action=action,
        target=target,
        detail=detail or {},
    )
