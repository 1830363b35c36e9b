"""What only the gateway can measure, reported through the registry's non-blocking metrics client:
`tool_execution` for every proxied initialize, tools/list and tools/call, and `protocol_latency` for the
steps of a session (initialize → tools/list → tools/call). A session's client name (from its
`initialize` clientInfo) and step times live in Redis under the session id, so any gateway process can
report any request of a session. Both are written once and never change, so a process remembers what it
has read (KNOWN): a session's later calls cost no Redis round trip."""

from __future__ import annotations

import logging
import time
from collections import OrderedDict

import redis

from core.metric_choices import FlowStep, MetricType, ToolMethod, values_of
from core.metrics_client import emit
from core.redis_clients import async_client

logger = logging.getLogger(__name__)

SESSION_TTL_SECONDS = 24 * 60 * 60
NAME_MAX_LENGTH = 255


class _Known:
    """A bounded memory of facts about sessions that never change once written (client names, steps)."""

    def __init__(self, size: int = 50_000):
        self.size = size
        self._facts: OrderedDict[tuple[str, str], str] = OrderedDict()

    def get(self, session_id: str, fact: str) -> str | None:
        return self._facts.get((session_id, fact))

    def put(self, session_id: str, fact: str, value: str) -> None:
        self._facts[(session_id, fact)] = value
        if len(self._facts) > self.size:
            self._facts.popitem(last=False)


KNOWN = _Known()


def _key(session_id: str) -> str:
    return f"registry:gateway:session:{session_id[:200]}"


async def session_started(session_id: str, client_name: str) -> None:
    """An `initialize` got a session: remember who the client is and when it began."""
    key = _key(session_id)
    try:
        pipe = async_client().pipeline(transaction=True)
        pipe.hset(key, mapping={"client": client_name[:NAME_MAX_LENGTH], "initialized": f"{time.time():.6f}"})
        pipe.expire(key, SESSION_TTL_SECONDS)
        await pipe.execute()
    except redis.RedisError:
        logger.warning("gateway session %s not recorded", key, exc_info=True)


async def session_client(session_id: str | None) -> str:
    if not session_id:
        return ""
    known = KNOWN.get(session_id, "client")
    if known is not None:
        return known
    try:
        name = await async_client().hget(_key(session_id), "client")
    except redis.RedisError:
        return ""
    found = name.decode() if name is not None else ""  # a session whose `initialize` was not seen: nameless
    KNOWN.put(session_id, "client", found)
    return found


async def _step(session_id: str, field: str) -> dict[str, float]:
    """Record when `field` first happened in this session; the session's step times so far (nothing when
    it happened before: its latency was reported then)."""
    if KNOWN.get(session_id, field) is not None:
        return {}
    key = _key(session_id)
    try:
        pipe = async_client().pipeline(transaction=True)
        pipe.hsetnx(key, field, f"{time.time():.6f}")
        pipe.hgetall(key)
        first, times = await pipe.execute()
    except redis.RedisError:
        return {}
    KNOWN.put(session_id, field, "")
    if not first:
        return {}
    return {
        k.decode(): float(v) for k, v in times.items() if k.decode() in ("initialized", "listed", "called")
    }


async def report(
    *,
    server_path: str,
    session_id: str | None,
    client_name: str,
    calls: list[tuple[str, str | None]],
    failed_ids: set,
    outcomes: dict,
    call_ids: list,
    received: float,
    started: float,
    input_bytes: int,
    output_bytes: int,
    http_ok: bool,
) -> None:
    """One `tool_execution` per proxied call, and the session's step latencies the first time a step
    happens. Its duration runs from when the gateway had the request (`received`); `upstream_ms` from
    when it sent it upstream (`started`): the MCP operation histograms' server and client sides
    (metrics/aggregates.py); `error_type` is the call's (gateway/tracing.outcome), when it failed.
    Never raises: metrics must not break traffic."""
    try:
        now = time.perf_counter()
        duration_ms, upstream_ms = (now - received) * 1000, (now - started) * 1000
        share = max(len(calls), 1)
        for (method, tool), call_id in zip(calls, call_ids, strict=False):
            if method not in values_of(ToolMethod):
                continue
            emit(
                MetricType.TOOL_EXECUTION,
                duration_ms=duration_ms,
                dimensions={
                    "server": server_path,
                    "method": method,
                    "tool_name": (tool or "")[:NAME_MAX_LENGTH],
                    "client_name": client_name,
                    "success": http_ok and call_id not in failed_ids,
                    "error_type": outcomes.get(call_id, (None,))[0] if http_ok else "http_error",
                    "upstream_ms": upstream_ms,
                    "input_size_bytes": input_bytes // share,
                    "output_size_bytes": output_bytes // share,
                },
            )
        if not session_id or not http_ok:
            return
        methods = {method for method, _ in calls}
        if ToolMethod.TOOLS_LIST in methods:
            times = await _step(session_id, "listed")
            _latency(FlowStep.DISCOVERY, times.get("initialized"), times.get("listed"))
        if ToolMethod.TOOLS_CALL in methods:
            times = await _step(session_id, "called")
            _latency(FlowStep.SELECTION, times.get("listed"), times.get("called"))
            _latency(FlowStep.FULL_FLOW, times.get("initialized"), times.get("called"))
    except Exception:
        logger.exception("gateway metrics not reported")


def _latency(step: str, start: float | None, end: float | None) -> None:
    if start is None or end is None or end < start:
        return
    emit(MetricType.PROTOCOL_LATENCY, duration_ms=(end - start) * 1000, dimensions={"flow_step": step})
