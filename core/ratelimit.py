"""Token buckets in Redis, shared by every process: one atomic Lua script per take or peek.

A bucket holds up to `capacity` tokens and refills continuously at `capacity / period` per second.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import lru_cache

from core.redis_clients import sync_client

# KEYS[1] bucket; ARGV: capacity, refill per second, now (s), cost (0 = peek), ttl (s)
_TAKE = """
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil then tokens = capacity; ts = now end
tokens = math.min(capacity, tokens + math.max(0, now - ts) * rate)
local allowed = 0
if tokens >= cost then
  tokens = math.min(capacity, tokens - cost)
  allowed = 1
end
if cost ~= 0 then
  redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
  redis.call('EXPIRE', KEYS[1], tonumber(ARGV[5]))
end
return {allowed, tostring(tokens)}
"""


@dataclass(frozen=True)
class Decision:
    allowed: bool
    limit: int
    remaining: int
    reset_seconds: int  # until the bucket is full again
    retry_after: int  # until one more request would be allowed (0 when allowed)

    def headers(self) -> dict[str, str]:
        out = {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Reset": str(self.reset_seconds),
        }
        if not self.allowed:
            out["Retry-After"] = str(self.retry_after)
        return out


@lru_cache(maxsize=1)
def _script():
    return sync_client().register_script(_TAKE)


def take(key: str, *, capacity: int, period_seconds: float, cost: int = 1) -> Decision:
    """Take `cost` tokens from the bucket `key` (cost 0 only looks; a negative cost gives tokens back)."""
    rate = capacity / period_seconds
    allowed, tokens = _script()(
        keys=[f"registry:ratelimit:{key}"],
        args=[capacity, rate, f"{time.time():.6f}", cost, math.ceil(period_seconds) + 1],
    )
    tokens = float(tokens)
    missing = capacity - tokens
    return Decision(
        allowed=bool(allowed) if cost else tokens >= 1,
        limit=capacity,
        remaining=max(0, math.floor(tokens)),
        reset_seconds=math.ceil(missing / rate) if missing > 0 else 0,
        retry_after=0
        if (allowed if cost else tokens >= 1)
        else max(1, math.ceil((max(cost, 1) - tokens) / rate)),
    )


def peek(key: str, *, capacity: int, period_seconds: float) -> Decision:
    return take(key, capacity=capacity, period_seconds=period_seconds, cost=0)


def reset(key: str) -> None:
    sync_client().delete(f"registry:ratelimit:{key}")
