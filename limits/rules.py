"""The one rule of what a limit or a quarantine may say, used by every surface that writes them (the
console, the internal API, the services): each problem by field, in words an operator can act on."""

from __future__ import annotations

import re

from django.contrib.auth import get_user_model

from core.targets import TARGETS
from core.validators import normalize_path
from limits.choices import WINDOWS, CallerKind, Counted, TargetKind

NAME_MAX = 200
REASON_MAX = 500
LIMIT_MAX = 1_000_000_000
MISSING = {
    TargetKind.SERVER: "No server is registered at {path}.",
    TargetKind.VIRTUAL_SERVER: "No virtual server is defined at {path}.",
    TargetKind.AGENT: "No agent is registered at {path}.",
}
_PRINTABLE = re.compile(r"^[^\x00-\x1f\x7f]+$")


class LimitRefused(ValueError):
    """A limit or quarantine the registry will not store: `problems` by field."""

    def __init__(self, problems: dict[str, str]):
        super().__init__("; ".join(f"{field}: {problem}" for field, problem in problems.items()))
        self.problems = problems


def limit_problems(
    *, caller_kind: str, caller: str, target_kind: str, target: str, windows, counts
) -> dict[str, str]:
    problems: dict[str, str] = {}
    if not caller_kind and not target_kind:
        problems["caller_kind"] = "A limit names a caller, a target, or both."
    if problem := _caller_problem(caller_kind, caller):
        problems["caller"] = problem
    if problem := _target_problem(target_kind, target):
        problems["target"] = problem
    if problem := _windows_problem(windows):
        problems["windows"] = problem
    if (
        not isinstance(counts, list)
        or not counts
        or not all(isinstance(item, str) and item in Counted.values for item in counts)
    ):
        problems["counts"] = f"A non-empty list of {', '.join(Counted.values)}."
    return problems


def quarantine_problems(*, kind: str, name: str, reason: str, actor=None) -> dict[str, str]:
    problems: dict[str, str] = {}
    if kind in CallerKind.values:
        problem = _caller_problem(kind, name)
    elif kind in TargetKind.values and kind != TargetKind.TAG:
        problem = _target_problem(kind, name)
    else:
        problem = "A user, group, application, server, virtual server or agent."
    if problem:
        problems["name" if kind in CallerKind.values + TargetKind.values else "kind"] = problem
    elif _locks_out(actor, kind, name):
        problems["name"] = "You cannot quarantine yourself: another administrator may."
    if not isinstance(reason, str) or not reason.strip() or len(reason) > REASON_MAX:
        problems["reason"] = f"Say why, in 1 to {REASON_MAX} characters: the refused caller is told."
    return problems


def target_path(kind: str, value: str) -> str:
    """A target as stored: a path in the one form paths take everywhere; a tag as given."""
    return value if kind == TargetKind.TAG else normalize_path(value)


def _caller_problem(kind: str, name: str) -> str | None:
    if not kind:
        return "Leave it empty when no caller kind is given." if name else None
    if kind not in CallerKind.values:
        return f"The caller kind is one of {', '.join(CallerKind.values)}."
    if not isinstance(name, str) or not name or len(name) > NAME_MAX or not _PRINTABLE.match(name):
        return f"Name the {kind} in 1 to {NAME_MAX} printable characters."
    if kind == CallerKind.USER and not get_user_model().objects.filter(username=name).exists():
        return f"No user or service account is named {name}."
    return None


def _target_problem(kind: str, value: str) -> str | None:
    if not kind:
        return "Leave it empty when no target kind is given." if value else None
    if kind not in TargetKind.values:
        return f"The target kind is one of {', '.join(TargetKind.values)}."
    if not isinstance(value, str) or not value or len(value) > NAME_MAX or not _PRINTABLE.match(value):
        return f"Name the {kind.replace('_', ' ')} in 1 to {NAME_MAX} printable characters."
    path = target_path(kind, value)
    if kind in MISSING and not TARGETS.registered(kind, path):  # each app that holds targets answers
        return MISSING[kind].format(path=path)
    return None


def _windows_problem(windows) -> str | None:
    shape = (
        f"A list of 1 to {len(WINDOWS)} windows, each "
        f'{{"per": {"|".join(WINDOWS)}, "limit": 1 to {LIMIT_MAX}}}.'
    )
    if not isinstance(windows, list) or not 1 <= len(windows) <= len(WINDOWS):
        return shape
    seen = set()
    for window in windows:
        if not isinstance(window, dict) or set(window) != {"per", "limit"}:
            return shape
        if not isinstance(window["per"], str) or window["per"] not in WINDOWS:
            return shape
        limit = window["limit"]
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= LIMIT_MAX:
            return shape
        if window["per"] in seen:
            return f"One window per {window['per']}."
        seen.add(window["per"])
    return None


def _locks_out(actor, kind: str, name: str) -> bool:
    """Whether quarantining kind:name would stop the administrator who does it."""
    if actor is None or not getattr(actor, "is_authenticated", False):
        return False
    if kind == CallerKind.USER:
        return actor.username == name
    if kind == CallerKind.GROUP:  # a Principal's groups are names; a User's, a manager
        groups = (
            actor.groups if isinstance(actor.groups, tuple) else actor.groups.values_list("name", flat=True)
        )
        return name in groups
    return False
