"""The one decision over limits and quarantines, for every kind of target the gateway carries (a server, a
virtual server, an agent): which apply to this caller and this target (plain values, from the snapshot
limits/selectors.py builds once per epoch), and the count, taken in Redis for all of them at once by one
Lua script (one round trip), tightest window first, in fixed windows: a window of a minute is the minute
of the clock, so every process and host counts the same calls in it. A denied call uses up no window."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from accounts.principal import Principal
from core.targets import Target
from limits.choices import CallerKind, TargetKind

# KEYS: one counter per window, tightest first; ARGV: each window's cost, limit and lifetime.
# {1, 0, count...} when every window takes its cost (all counted), else {0, the denying window, its count}.
TAKE_SCRIPT = """
for i, key in ipairs(KEYS) do
  local used = tonumber(redis.call('GET', key) or '0')
  if used + tonumber(ARGV[3 * i - 2]) > tonumber(ARGV[3 * i - 1]) then return {0, i, used} end
end
local counts = {1, 0}
for i, key in ipairs(KEYS) do
  local cost = tonumber(ARGV[3 * i - 2])
  local count = redis.call('INCRBY', key, cost)
  if count == cost then redis.call('EXPIRE', key, tonumber(ARGV[3 * i])) end
  counts[i + 2] = count
end
return counts
"""

COSTS_REMEMBERED = 10_000  # (caller, targets, calls) whose counters a snapshot keeps worked out


@dataclass(frozen=True)
class LimitRule:
    pk: int
    caller_kind: str
    caller: str
    target_kind: str
    target: str
    windows: tuple[tuple[str, int, int], ...]  # (name, seconds, limit), shortest first
    counts: frozenset[str]
    fail_open: bool

    def caller_key(self, principal: Principal) -> str | None:
        """Whose count this call goes to under this limit, or None when the limit is not the caller's."""
        if not self.caller_kind:
            return "*"  # the target's own limit: every caller together
        if self.caller_kind == CallerKind.USER:
            return f"u:{principal.username}" if principal.username == self.caller else None
        if self.caller_kind == CallerKind.GROUP:
            return f"u:{principal.username}" if self.caller in principal.groups else None
        if self.caller_kind == CallerKind.APPLICATION and principal.client_id == self.caller:
            return f"a:{principal.client_id}"
        return None

    def reaches(self, target: Target) -> bool:
        if not self.target_kind:
            return True
        if self.target_kind == TargetKind.TAG:
            return target.kind == TargetKind.SERVER and self.target in target.tags
        return self.target_kind == target.kind and self.target == target.path


@dataclass(frozen=True)
class Rules:
    """Every limit, and every quarantine by (kind, name) -> reason."""

    limits: tuple[LimitRule, ...] = ()
    quarantines: Mapping[tuple[str, str], str] = field(default_factory=dict)
    _costs: dict = field(default_factory=dict, compare=False, repr=False)

    def quarantined(self, principal: Principal, target: Target) -> str | None:
        """Why everything this caller sends to this target is refused at once, or None."""
        if not self.quarantines:
            return None
        subjects = [(CallerKind.USER, principal.username), (target.kind, target.path)]
        subjects += [(CallerKind.GROUP, group) for group in principal.groups]
        if principal.client_id:
            subjects.append((CallerKind.APPLICATION, principal.client_id))
        for subject in subjects:
            if (reason := self.quarantines.get(subject)) is not None:
                return reason
        return None

    def costs(self, principal: Principal, targets: tuple[Target, ...], counted: Mapping[str, int]) -> Costs:
        """The counters calls to `targets` go to (a virtual server and the member it routes to are counted
        together; a limit that reaches both counts a call once), each with how many of `counted` (calls
        by kind: limits/choices.Counted) it counts, tightest window first. Worked out once per caller,
        targets and calls while this snapshot lasts (the gateway's hot path asks the same again and again)."""
        memo = (principal.username, principal.client_id, principal.groups, targets, tuple(counted.items()))
        found = self._costs.get(memo)
        if found is None:
            if len(self._costs) >= COSTS_REMEMBERED:
                self._costs.clear()
            found = self._costs[memo] = self._costs_of(principal, targets, counted)
        return found

    def _costs_of(self, principal, targets, counted) -> Costs:
        found: dict[Counter, int] = {}
        for rule in self.limits:
            cost = sum(number for kind, number in counted.items() if kind in rule.counts)
            if not cost or not any(rule.reaches(target) for target in targets):
                continue
            key = rule.caller_key(principal)
            if key is not None:
                for name, seconds, limit in rule.windows:
                    found[Counter(rule, name, seconds, limit, key)] = cost
        return Costs(tuple(sorted(found.items(), key=lambda item: (item[0].seconds, item[0].limit))))


@dataclass(frozen=True)
class Counter:
    rule: LimitRule
    window: str
    seconds: int
    limit: int
    caller_key: str
    # Worked out once: the counter's key but for its window's number, and its RateLimit policy.
    prefix: str = field(init=False, repr=False, compare=False)
    policy: str = field(init=False, repr=False, compare=False)
    policy_header: str = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        policy = f"l{self.rule.pk}-{self.window}"
        object.__setattr__(self, "prefix", f"registry:limit:{self.rule.pk}:{self.caller_key}:{self.seconds}:")
        object.__setattr__(self, "policy", policy)
        object.__setattr__(self, "policy_header", f'"{policy}";q={self.limit};w={self.seconds}')

    def key(self, now: float) -> str:
        return f"{self.prefix}{int(now // self.seconds)}"

    def reset(self, now: float) -> float:
        """Seconds until this window starts again."""
        return self.seconds - (now % self.seconds)


@dataclass(frozen=True)
class Costs:
    """The counters a request goes to, tightest window first, each with what the request costs it; and
    the part of the script's command that never changes (each counter's cost, limit and lifetime)."""

    items: tuple[tuple[Counter, int], ...] = ()
    counters: tuple[Counter, ...] = field(init=False, repr=False, compare=False)
    argv: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "counters", tuple(counter for counter, _ in self.items))
        tail = []
        for counter, cost in self.items:
            tail += [cost, counter.limit, counter.seconds + 1]
        object.__setattr__(self, "argv", tuple(tail))

    def __bool__(self) -> bool:
        return bool(self.items)

    def keys(self, now: float) -> list[str]:
        return [counter.key(now) for counter in self.counters]


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    headers: dict[str, str] = field(default_factory=dict)
    retry_after_ms: int = 0
    unavailable: bool = False  # Redis could not count and a limit fails closed
    denied_by: Counter | None = None


ALLOWED = Verdict(allowed=True)


def verdict_of(answer, counters: tuple[Counter, ...], now: float) -> Verdict:
    """What the script's answer means, with the IETF RateLimit headers of the window that decided (the
    denying one, or the one with the fewest calls left)."""
    if int(answer[0]) == 0:
        counter = counters[int(answer[1]) - 1]
        reset = counter.reset(now)
        retry_after_ms = max(1, math.ceil(reset * 1000))
        return Verdict(
            allowed=False,
            headers={
                "Retry-After": str(max(1, math.ceil(reset))),
                **_rate_limit_headers(counter, 0, reset),
            },
            retry_after_ms=retry_after_ms,
            denied_by=counter,
        )
    remaining, counter = min(
        ((each.limit - count, each) for each, count in zip(counters, answer[2:], strict=True)),
        key=lambda item: item[0],
    )
    return Verdict(allowed=True, headers=_rate_limit_headers(counter, remaining, counter.reset(now)))


def unavailable(costs: Costs) -> Verdict:
    """Redis did not answer: through when every limit that applies fails open, else refused."""
    if all(counter.rule.fail_open for counter in costs.counters):
        return ALLOWED
    return Verdict(allowed=False, unavailable=True)


def _rate_limit_headers(counter: Counter, remaining: int, reset: float) -> dict[str, str]:
    return {
        "RateLimit-Policy": counter.policy_header,
        "RateLimit": f'"{counter.policy}";r={max(0, remaining)};t={max(1, math.ceil(reset))}',
    }


def now() -> float:
    return time.time()
