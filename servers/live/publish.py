"""The one place a health change is published.

A change of a server's health entry (status or number of tools), a new server and a deleted one are sent
after their transaction commits to one channel-layer group in Redis, so a check run by any worker reaches
the websocket clients of every web process. Publishing never fails the write that caused it, and runs on
the process's own event loop (core/loop_thread.py), so every publish of a process shares its Redis
connections."""

import logging

from channels.layers import get_channel_layer
from django.db import transaction

from core import loop_thread
from servers.live.entries import health_entry

logger = logging.getLogger(__name__)

GROUP = "health"
MESSAGE_TYPE = "health.changed"  # handled by `HealthStatusConsumer.health_changed`


def health_changed(server) -> None:
    """Publish `server`'s current entry once the surrounding transaction commits."""
    entry = health_entry(
        server.health_status,
        server.last_checked_at,
        server.num_tools,
        server.health_detail,
        server.is_enabled,
    )
    entry_changed(server.path, enabled=server.is_enabled, entry=entry)


def health_removed(path: str) -> None:
    """Publish that the server at `path` is gone (clients receive `{path: null}`)."""
    entry_changed(path, enabled=False, entry=None)


def entry_changed(key: str, *, enabled: bool, entry: dict | None, **about) -> None:
    """Publish the entry under `key` once the surrounding transaction commits; `about` tells the sockets
    more of who may see it (an agent's entry: agents/live.py)."""
    message = {"type": MESSAGE_TYPE, "path": key, "enabled": enabled, "entry": entry, **about}
    transaction.on_commit(lambda: _send(message))


def _send(message: dict) -> None:
    try:
        loop_thread.run(get_channel_layer().group_send(GROUP, message))
    except Exception:  # Redis down: the change is stored; clients catch up from the next snapshot
        logger.warning("could not publish the health change of %s", message["path"], exc_info=True)
