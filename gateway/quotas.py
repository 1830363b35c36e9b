"""Limits and quarantine where the gateway carries traffic, for every kind of target (servers and virtual
servers here, A2A agents in gateway/a2a/app.py): limits/decision.py decides; this module reads the
snapshot for the request's epoch, counts what a request calls, and words the refusal the way each
protocol expects (MCP: HTTP 429 with `Retry-After` and the IETF RateLimit headers, each counted request
answered with the draft JSON-RPC error -32023 carrying `retryAfterMs`)."""

from __future__ import annotations

import logging
import time

from channels.db import database_sync_to_async
from redis.exceptions import RedisError

from core.epochs import MISSING
from core.errors import ErrorCode
from core.redis_clients import async_client
from core.targets import Target, TargetKind
from gateway import fair_share, jsonrpc
from gateway.routing import Refusal
from limits import counting
from limits.choices import Counted
from limits.decision import ALLOWED, Rules, Verdict
from limits.selectors import rules_cached, rules_for
from metrics.aggregates import refusal_counted as refusal_counted_at
from metrics.refusals import KEPT_SECONDS as TIMELINE_KEPT_SECONDS
from metrics.refusals import timeline_field

logger = logging.getLogger(__name__)

RATE_LIMITED = -32023  # the draft MCP error (SEP-3304): its data carries retryAfterMs
COUNTED_MCP = {
    "tools/call": Counted.TOOLS,
    "prompts/get": Counted.PROMPTS,
    "resources/read": Counted.RESOURCES,
}
UNAVAILABLE = "Calls to this target are limited and the limits cannot be counted now; try again shortly."


async def rules(epoch) -> Rules:
    """Every limit and quarantine: this process's snapshot of `epoch`, read from the database once."""
    found = rules_cached(epoch)
    if found is MISSING:
        found = await database_sync_to_async(rules_for)(epoch)
    return found


def target_of(route) -> Target:
    if route.virtual is not None:
        return Target(TargetKind.VIRTUAL_SERVER, route.virtual.path)
    return Target(TargetKind.SERVER, route.server.path, tuple(route.server.tags or ()))


async def check_quarantine(found: Rules, principal, target: Target) -> None:
    """Refusal(403) when the caller or the target is quarantined, with the reason the operator gave."""
    if (text := await quarantine_refusal(found, principal, target)) is not None:
        raise Refusal(403, ErrorCode.PERMISSION_DENIED, text)


async def quarantine_refusal(found: Rules, principal, target: Target) -> str | None:
    """The refusal's text when the caller or the target is quarantined (the refusal counted), or None."""
    if (reason := found.quarantined(principal, target)) is None:
        return None
    await refusal_counted(principal, target, "quarantined")
    return quarantined(reason)


async def refusal_counted(principal, target: Target, reason: str) -> None:
    """One refused call in the exported counter (metrics/aggregates.py), by target, caller kind, reason,
    and in the console's timeline (metrics/refusals.py), in one round trip; a count Redis cannot take is
    logged and the refusal stands."""
    key, field = refusal_counted_at(target.path, caller_kind(principal), reason)
    hour, minute = timeline_field(target.path, reason, time.time())
    try:
        pipe = async_client().pipeline(transaction=False)
        pipe.hincrby(key, field, 1)
        pipe.hincrby(hour, minute, 1)
        pipe.expire(hour, TIMELINE_KEPT_SECONDS)
        await pipe.execute()
    except (RedisError, OSError):
        logger.warning("Could not count a refused call of %s.", target.path)


def caller_kind(principal) -> str:
    if not principal.is_authenticated:
        return "anonymous"
    if principal.client_id and principal.user is None:
        return "application"
    if principal.user is not None and principal.user.is_service_account:
        return "service_account"
    return "user"


def quarantined(reason: str) -> str:
    return f"Quarantined by an operator: {reason}"


async def verdict(
    found: Rules, principal, target: Target, counted: dict[str, int], also: tuple[Target, ...] = ()
) -> Verdict:
    """Count these calls (by kind) to `target` (and to the targets `also` reached with it) against every
    limit that applies, in one round trip; a refusal is counted in the exported counter under `target`."""
    if not found.limits or not counted:
        return ALLOWED
    judged = await counting.take(found.costs(principal, (target, *also), counted))
    if not judged.allowed:
        await refusal_counted(
            principal, target, "limits_unavailable" if judged.unavailable else "rate_limited"
        )
    return judged


def refusal(judged: Verdict) -> tuple[int, int, str, dict | None, dict[str, str]]:
    """How a refused verdict is answered, whatever the protocol: (HTTP status, JSON-RPC code, message,
    the error's data, headers)."""
    if judged.unavailable:
        return 503, jsonrpc.INTERNAL_ERROR, UNAVAILABLE, None, {"Retry-After": "1"}
    window = judged.denied_by
    text = (
        f"Rate limited: at most {window.limit} calls per {window.window} here; "
        f"retry in {judged.retry_after_ms / 1000:.1f} s."
    )
    return 429, RATE_LIMITED, text, {"retryAfterMs": judged.retry_after_ms}, judged.headers


def mcp_refusal(judged: Verdict, checked) -> tuple[int, object, dict]:
    """(status, JSON-RPC answer, headers) for a POST whose calls are over a limit: none of them is
    forwarded, every request is answered with the refusal (notifications go nowhere)."""
    status, code, text, data, headers = refusal(judged)
    errors = _each_request(checked, code, text, data) + checked.denied
    payload = errors if checked.batch else errors[0]
    return status, payload, headers


def _each_request(checked, code: int, text: str, data: dict | None) -> list[dict]:
    """The same error for each request a POST would forward (notifications are answered nothing)."""
    return [
        limit_error(raw["id"], code, text, data) for raw in checked.forward if "id" in raw and "method" in raw
    ]


def limit_error(request_id, code: int, text: str, data: dict | None) -> dict:
    message = jsonrpc.error_message(request_id, code, text)
    if data is not None:
        message["error"]["data"] = data
    return message


def over_share(full, checked) -> tuple[int, object, dict] | None:
    """An MCP POST over its caller's or its upstream's fair share (gateway/fair_share.py), answered as a
    limit's refusal is: 429, -32023 for each request with `retryAfterMs`, `Retry-After`. None when it
    carries no request (a GET stream, a notification: the front's 429 then)."""
    if checked is None:
        return None
    retry = {"retryAfterMs": fair_share.RETRY_AFTER_SECONDS * 1000}
    errors = _each_request(checked, RATE_LIMITED, full.detail, retry)
    if not errors:
        return None
    return 429, errors if checked.batch else errors[0], full.headers
