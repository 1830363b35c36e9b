"""Reads of limits and quarantines: the snapshot the gateway decides with (limits/decision.py), and what
they say of a target in words, for the pages that show it (`restrictions_of`)."""

from __future__ import annotations

from django.db.models import Q

from core.epochs import MISSING
from limits.cache import LIMITS
from limits.choices import WINDOWS, CallerKind, Counted, TargetKind
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


def restrictions_of(targets: list[tuple[str, str, tuple[str, ...]]]) -> dict[str, list[tuple[str, str]]]:
    """What the quarantines and limits that apply to each target (kind, path, tags) say, by path, as
    ("quarantine" | "limit", words): the quarantine's reason first, then each limit on the target itself,
    on one of its tags or on every target. Read from this process's snapshot of the rules (the one the
    gateway decides with): no query while the rules do not change."""
    rules = rules_for(LIMITS.epoch())
    said: dict[str, list[tuple[str, str]]] = {}
    for kind, path, tagged in targets:
        reason = rules.quarantines.get((kind, path))
        words = [("quarantine", f"Quarantined by an operator: {reason}")] if reason is not None else []
        for limit in rules.limits:
            if (
                not limit.target_kind
                or (limit.target_kind == kind and limit.target == path)
                or (limit.target_kind == TargetKind.TAG and limit.target in tagged)
            ):
                windows = [(name, count) for name, _, count in limit.windows]
                words.append(("limit", _in_words(limit, windows)))
        if words:
            said[path] = words
    return said


def limit_in_words(limit: Limit) -> str:
    """ "Limit: 60 calls a minute, 1000 a day for each member of ops (every server tagged finance)"."""
    windows = sorted(
        ((w.get("per"), w.get("limit")) for w in limit.windows or []), key=lambda w: WINDOWS.get(w[0], 0)
    )
    return _in_words(limit, windows)


def _in_words(limit: Limit | LimitRule, windows: list[tuple[str, int]]) -> str:
    counted = (
        "calls"
        if set(limit.counts) >= {Counted.TOOLS, Counted.PROMPTS, Counted.RESOURCES}
        else " and ".join(Counted(name).label for name in limit.counts if name in Counted.values)
    )
    rates = ", ".join(f"{count} a {per}" for per, count in windows)
    rates = rates.replace(" a ", f" {counted} a ", 1)
    who = {
        CallerKind.USER: f"for {limit.caller}",
        CallerKind.GROUP: f"for each member of {limit.caller}",
        CallerKind.APPLICATION: f"for the application {limit.caller}",
    }.get(limit.caller_kind, "for everyone together")
    where = (
        " (every target)"
        if not limit.target_kind
        else f" (every server tagged {limit.target})"
        if limit.target_kind == TargetKind.TAG
        else ""
    )
    return f"Limit: {rates} {who}{where}"


def caller_restrictions_of(username: str, groups) -> list[tuple[str, str]]:
    """The quarantines and limits that apply to a user (by name) and to the groups they are in, as
    ("quarantine" | "limit", words), for the console's effective-access view."""
    named = Q(kind=CallerKind.USER, name=username) | Q(kind=CallerKind.GROUP, name__in=list(groups))
    said = [
        ("quarantine", f"Quarantined by an operator ({q.kind} {q.name}): {q.reason}")
        for q in Quarantine.objects.filter(named)
    ]
    limits = Limit.objects.filter(
        Q(caller_kind=CallerKind.USER, caller=username)
        | Q(caller_kind=CallerKind.GROUP, caller__in=list(groups))
    )
    for limit in limits:
        target = f" on {limit.target_kind.replace('_', ' ')} {limit.target}" if limit.target_kind else ""
        said.append(("limit", limit_in_words(limit) + target))
    return said
