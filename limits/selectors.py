"""Reads of limits and quarantines: the snapshot the gateway decides with (limits/decision.py)."""

from __future__ import annotations

from core.epochs import MISSING
from limits.cache import LIMITS
from limits.choices import WINDOWS
from limits.decision import LimitRule, Rules
from limits.models import Limit, Quarantine

SNAPSHOT = "rules"


def rules_for(epoch) -> Rules:
    """Every limit and quarantine, from this process's snapshot of `epoch` (read once per epoch)."""
    rules = LIMITS.get(SNAPSHOT, epoch)
    if rules is MISSING:
        rules = rules_snapshot()
        LIMITS.put(SNAPSHOT, rules, epoch)
    return rules


def rules_cached(epoch):
    """rules_for from the snapshot alone (no database): MISSING when this process has none of `epoch`."""
    return LIMITS.get(SNAPSHOT, epoch)


def rules_snapshot() -> Rules:
    limits = tuple(
        LimitRule(
            pk=limit.pk,
            caller_kind=limit.caller_kind,
            caller=limit.caller,
            target_kind=limit.target_kind,
            target=limit.target,
            windows=tuple(
                sorted(((w["per"], WINDOWS[w["per"]], w["limit"]) for w in limit.windows), key=lambda w: w[1])
            ),
            counts=frozenset(limit.counts),
            fail_open=limit.fail_open,
        )
        for limit in Limit.objects.all()
    )
    quarantines = {(q.kind, q.name): q.reason for q in Quarantine.objects.all()}
    return Rules(limits=limits, quarantines=quarantines)
