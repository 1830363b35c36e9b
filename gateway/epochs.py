"""The cache epochs a gateway request is served under, read once per request (from the push, or in one
Redis round trip: core/epochs.py) and named, so no code says `epochs[4]` for "the limits' epoch"."""

from __future__ import annotations

from dataclasses import dataclass

from accounts.cache import PRINCIPALS
from agents.cache import ROUTES as AGENT_ROUTES
from core.epochs import epochs_async
from limits.cache import LIMITS
from servers.cache import ROUTES, TRUST
from virtual_servers.cache import VIRTUALS


@dataclass(frozen=True)
class Epochs:
    principals: bytes | None = None  # who callers are (accounts/cache.py)
    routes: bytes | None = None  # which server holds a path (servers/cache.py)
    virtuals: bytes | None = None  # virtual servers and their gathered lists (virtual_servers/cache.py)
    trust: bytes | None = None  # pinned, held and blocked tools (servers/cache.py)
    limits: bytes | None = None  # limits and quarantines (limits/cache.py)
    agents: bytes | None = None  # which agents a path names (agents/cache.py)


async def request_epochs() -> Epochs:
    return Epochs(*await epochs_async(PRINCIPALS, ROUTES, VIRTUALS, TRUST, LIMITS, AGENT_ROUTES))
