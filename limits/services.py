"""Writes of limits and quarantines: checked by the one rule (limits/rules.py), audited, and applied by
every gateway process on its next request (the LIMITS epoch)."""

from __future__ import annotations

from django.db import transaction

from accounts.choices import AuditAction
from accounts.services import actor_user, audit_event_record
from limits.cache import LIMITS
from limits.choices import Counted
from limits.models import Limit, Quarantine
from limits.rules import LimitRefused, limit_problems, quarantine_problems, target_path


def limit_set(
    *,
    actor,
    limit: Limit | None = None,
    caller_kind: str = "",
    caller: str = "",
    target_kind: str = "",
    target: str = "",
    windows,
    counts=None,
    fail_open: bool = False,
    note: str = "",
) -> Limit:
    """Create a limit, or replace what `limit` says; LimitRefused with each problem by field."""
    counts = list(Counted.values) if counts is None else counts
    problems = limit_problems(
        caller_kind=caller_kind,
        caller=caller,
        target_kind=target_kind,
        target=target,
        windows=windows,
        counts=counts,
    )
    if problems:
        raise LimitRefused(problems)
    limit = limit or Limit(created_by=actor_user(actor))
    limit.caller_kind, limit.caller = caller_kind, caller
    limit.target_kind, limit.target = target_kind, target_path(target_kind, target) if target_kind else ""
    limit.windows, limit.counts, limit.fail_open, limit.note = windows, counts, bool(fail_open), note[:200]
    with transaction.atomic():
        limit.save()
        audit_event_record(
            actor=actor, action=AuditAction.LIMIT_SET, target=f"limit:{limit.pk}", detail=_said(limit)
        )
        LIMITS.bump()
    return limit


def limit_remove(*, actor, limit: Limit) -> None:
    with transaction.atomic():
        detail, pk = _said(limit), limit.pk
        limit.delete()
        audit_event_record(actor=actor, action=AuditAction.LIMIT_REMOVE, target=f"limit:{pk}", detail=detail)
        LIMITS.bump()


def quarantine_set(*, actor, kind: str, name: str, reason: str) -> Quarantine:
    """Stop a caller or a target at once; LimitRefused with each problem by field (an administrator
    cannot quarantine themselves)."""
    if problems := quarantine_problems(kind=kind, name=name, reason=reason, actor=actor):
        raise LimitRefused(problems)
    name = name if kind in ("user", "group", "application") else target_path(kind, name)
    with transaction.atomic():
        quarantine, _ = Quarantine.objects.update_or_create(
            kind=kind, name=name, defaults={"reason": reason.strip(), "created_by": actor_user(actor)}
        )
        audit_event_record(
            actor=actor,
            action=AuditAction.QUARANTINE,
            target=f"{kind}:{name}",
            detail={"reason": quarantine.reason},
        )
        LIMITS.bump()
    return quarantine


def quarantine_lift(*, actor, quarantine: Quarantine) -> None:
    with transaction.atomic():
        subject = f"{quarantine.kind}:{quarantine.name}"
        quarantine.delete()
        audit_event_record(actor=actor, action=AuditAction.QUARANTINE_LIFT, target=subject)
        LIMITS.bump()


def _said(limit: Limit) -> dict:
    return {
        "caller": f"{limit.caller_kind}:{limit.caller}" if limit.caller_kind else "*",
        "target": f"{limit.target_kind}:{limit.target}" if limit.target_kind else "*",
        "windows": limit.windows,
        "counts": limit.counts,
        "fail_open": limit.fail_open,
    }
