"""The count itself: one Lua script (limits/decision.py) over every counter a call goes to, in one Redis
round trip, shared by every process and host that talks to the same Redis."""

from __future__ import annotations

import logging
import weakref

from redis.exceptions import RedisError

from core.redis_clients import async_client
from limits.decision import ALLOWED, TAKE_SCRIPT, Counter, Verdict, arguments, now, unavailable, verdict_of

logger = logging.getLogger(__name__)

_scripts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # client -> its registered script


async def take(costs: dict[Counter, int]) -> Verdict:
    """Count each counter's cost, or nothing when one of them would pass its limit."""
    if not costs:
        return ALLOWED
    at = now()
    keys, args = arguments(costs, at)
    try:
        client = async_client()
        script = _scripts.get(client)
        if script is None:
            script = _scripts[client] = client.register_script(TAKE_SCRIPT)
        answer = await script(keys=keys, args=args)
    except (RedisError, OSError):
        logger.warning("Redis could not count a limited call.", exc_info=True)
        return unavailable(costs)
    return verdict_of(answer, list(costs), at)
