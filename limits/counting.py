"""The count itself: one Lua script (limits/decision.py) over every counter a call goes to, in one Redis
round trip on the event loop's pipelined connection (core/redis_pipe.py), shared by every process and host
that talks to the same Redis."""

from __future__ import annotations

import hashlib
import logging

from redis.exceptions import NoScriptError, RedisError

from core import redis_clients
from limits.decision import ALLOWED, TAKE_SCRIPT, Costs, Verdict, now, unavailable, verdict_of

logger = logging.getLogger(__name__)

TAKE_SHA = hashlib.sha1(TAKE_SCRIPT.encode()).hexdigest()


async def take(costs: Costs) -> Verdict:
    """Count each counter's cost, or nothing when one of them would pass its limit."""
    if not costs:
        return ALLOWED
    at = now()
    keys = costs.keys(at)
    try:
        pipe = redis_clients.pipe()
        try:
            answer = await pipe.execute("EVALSHA", TAKE_SHA, len(keys), *keys, *costs.argv)
        except NoScriptError:  # a Redis that has not seen it yet (new, restarted, failed over)
            answer = await pipe.execute("EVAL", TAKE_SCRIPT, len(keys), *keys, *costs.argv)
    except (RedisError, OSError):
        logger.warning("Redis could not count a limited call.", exc_info=True)
        return unavailable(costs)
    return verdict_of(answer, costs.counters, at)
