"""The one decision over a gateway request, for every target kind (a server, a virtual server, an agent) and
every surface that lets calls through (the MCP carrier, the A2A carrier, `/validate`), in a fixed order:

1. **audience** (RFC 8707): an authorized application's token works only at the resource it was issued
   for, with the `mcp` scope, while its user may use that server; no token is issued for an agent;
2. **quarantine**: the caller's or the target's, refused with the operator's reason;
3. **the rule** with the operators' trust: each call by a scope's server rule at the target's path, a
   tool or prompt operators withhold refused to everyone;
4. **limits**: the calls the rule lets through, counted against every limit that applies in one Redis
   round trip (a denied call uses up no window).

`admit` is steps 1 and 2, which refuse the whole request (`Refusal`, protocol-neutral: each carrier words
it), taken before a body is read; `judged_calls` is steps 3 and 4 for a request whose calls stand or fall
together (A2A, `/validate`), giving a `Judgement`; a carrier that answers each message of a batch on its
own (MCP) asks `refusal` message by message and `counted` for what it lets through. Each carrier words
the outcome in its protocol (MCP: JSON-RPC errors, -32023 with `retryAfterMs`; A2A: its bindings' error
shapes; `/validate`: HTTP 403 and 429)."""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Sequence
from dataclasses import dataclass, field

from accounts.principal import Principal
from agents.a2a import MESSAGE_METHODS
from core.errors import ErrorCode
from core.targets import Target, TargetKind
from gateway import jsonrpc, quotas
from gateway.routing import Refusal
from limits.choices import Counted
from limits.decision import ALLOWED, Rules, Verdict

AUDIENCE_REFUSED = "The token was issued for another resource."


@dataclass
class Judgement:
    """Steps 3 and 4: which calls the rule refused (by index, with why), and the limits' verdict on the
    others (its `headers` go with an allowed answer; a refused one is worded by quotas.refusal)."""

    denied: dict[int, str] = field(default_factory=dict)
    limits: Verdict = ALLOWED


async def admit(principal: Principal, target: Target, rules: Rules, *, audience: str) -> None:
    """Steps 1 and 2 (Refusal when either refuses), under the limits' snapshot `rules` of the request's
    epoch (gateway/quotas.rules). `audience` is the resource the request names, as the client wrote it."""
    _audience(principal, target, audience)
    await quotas.check_quarantine(rules, principal, target)


async def judged_calls(
    rules: Rules, principal: Principal, target: Target, calls: Sequence[jsonrpc.Message]
) -> Judgement:
    """Steps 3 and 4 for a request already admitted."""
    denied = {index: why for index, call in enumerate(calls) if (why := refusal(principal, target, call))}
    if denied:
        return Judgement(denied=denied)
    methods = [call.method for call in calls if call.kind == "request"]
    return Judgement(limits=await counted(rules, principal, target, methods))


def refusal(principal: Principal, target: Target, call: jsonrpc.Message) -> str | None:
    """Step 3 for one call: why the rule, with the operators' trust, refuses it, or None. A carrier that
    answers each message of a batch on its own (MCP: gateway/messages.py) asks it message by message."""
    return None if _allowed(principal, target, call) else _denial(principal, target, call)


async def counted(rules: Rules, principal: Principal, target: Target, methods: Sequence[str]) -> Verdict:
    """Step 4: the calls the rule let through (their methods), counted against every limit that applies
    to the caller and the target, in one Redis round trip (listing and session upkeep never count)."""
    kinds = Tally(kind for method in methods if (kind := _counted(target, method)) is not None)
    return await quotas.verdict(rules, principal, target, dict(kinds))


async def member_judged(
    rules: Rules, principal: Principal, virtual: Target, member: Target, call: jsonrpc.Message
) -> Judgement:
    """A virtual server's routed call, once its member is known (the virtual server was admitted as any
    target): step 2 for the member (its quarantine: Refusal), step 3 at the member (its rule and trust),
    step 4 against the limits of the virtual server and of the member together, in one count."""
    await quotas.check_quarantine(rules, principal, member)
    if why := refusal(principal, member, call):
        return Judgement(denied={0: why})
    kind = _counted(member, call.method) if call.kind == "request" else None
    return Judgement(
        limits=await quotas.verdict(rules, principal, member, {kind: 1} if kind else {}, (virtual,))
    )


def _audience(principal: Principal, target: Target, audience: str) -> None:
    if principal.audience is None:
        return
    if principal.bound_elsewhere(audience):
        raise Refusal(401, ErrorCode.TOKEN_AUDIENCE, AUDIENCE_REFUSED)
    if principal.lacks_oauth_scope("mcp"):
        raise Refusal(403, ErrorCode.INSUFFICIENT_SCOPE, "The token's authorization does not include mcp.")
    if target.kind == TargetKind.AGENT:
        if not any(principal.allows_mcp(target.path, method) for method in MESSAGE_METHODS):
            raise Refusal(
                403,
                ErrorCode.INSUFFICIENT_SCOPE,
                f"'{principal.username}' may not use agent '{target.path}'.",
            )
    elif not principal.allows_mcp(target.path, jsonrpc.INITIALIZE):
        raise Refusal(
            403, ErrorCode.INSUFFICIENT_SCOPE, f"'{principal.username}' may not use server '{target.path}'."
        )


def _allowed(principal: Principal, target: Target, call: jsonrpc.Message) -> bool:
    if target.kind == TargetKind.AGENT:  # A2A methods, by a scope's rule naming the agent's path
        return call.method is not None and principal.allows_mcp(target.path, call.method)
    return jsonrpc.allowed(principal, target.path, call)


def _denial(principal: Principal, target: Target, call: jsonrpc.Message) -> str:
    if target.kind == TargetKind.AGENT:
        method = str(call.method)[:100]
        return f"Access denied: '{principal.username}' may not call {method} on agent '{target.path}'."
    return jsonrpc.denial(principal, target.path, call)


def _counted(target: Target, method: str | None) -> str | None:
    if target.kind == TargetKind.AGENT:
        return Counted.A2A if method in MESSAGE_METHODS else None
    return quotas.COUNTED_MCP.get(method)
