"""The one decision (gateway/decision.py) at a virtual server's member, worded as MCP: a routed request is
judged once its member is known, the virtual server itself having been admitted as any target is. The
member's quarantine, the member's rule (a tool operators withhold named as the client knows it, by its
alias), then the limits of the virtual server and of the member together in one count (a limit on a server
holds however its calls arrive, and a call one of them refuses uses up neither)."""

from __future__ import annotations

from core.targets import Target, TargetKind
from gateway import decision, jsonrpc, quotas
from gateway.routing import Refusal


async def refused(caller, member, message: dict, routed: dict) -> tuple[dict, int, dict] | None:
    """(the JSON-RPC error to answer, the HTTP status of a request answered alone, its headers), or None
    when the member may be asked: a quarantine or the rule is an error of this call (200), a limit 429
    with Retry-After and RateLimit as a plain server's."""
    request_id = message.get("id")
    rules = await quotas.rules(caller.epochs.limits)
    target = Target(TargetKind.SERVER, member.server.path, tuple(member.server.tags or ()))
    virtual = Target(TargetKind.VIRTUAL_SERVER, caller.virtual_path)
    try:
        judged = await decision.member_judged(
            rules, caller.principal, virtual, target, jsonrpc.read(routed)[1][0]
        )
    except Refusal as quarantined:
        return jsonrpc.error_message(request_id, jsonrpc.FORBIDDEN, quarantined.detail), 200, {}
    if judged.denied:
        denial = denial_of(caller.principal, member, message, routed)
        return jsonrpc.error_message(request_id, jsonrpc.FORBIDDEN, denial), 200, {}
    if judged.limits.allowed:
        return None
    status, code, text, data, headers = quotas.refusal(judged.limits)
    return quotas.limit_error(request_id, code, text, data), status, headers


def denial_of(principal, member, message: dict, routed: dict) -> str:
    """Why the member's own server refuses a routed request: a tool operators withhold is named as the
    client knows it (its alias), anything else the caller may not do there is said plainly."""
    backing = jsonrpc.read(routed)[1][0]
    shown_as = (message.get("params") or {}).get("name")
    if backing.method == jsonrpc.PROMPTS_GET:
        withheld = principal.prompt_refusal(member.server.path, backing.target, shown_as)
    else:
        shown_as = shown_as if backing.method == jsonrpc.TOOLS_CALL else None
        withheld = principal.tool_refusal(member.server.path, backing.tool, shown_as)
    return (
        withheld or f"Access denied: '{principal.username}' may not do this on server '{member.server.path}'."
    )
