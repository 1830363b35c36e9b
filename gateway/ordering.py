"""A session's requests reach its server in the order they reached this gateway process, where order
matters: a server may send its own requests (sampling, elicitation) on the session's GET stream, so a
POST that arrives after the client opened that stream must not overtake it on the way to the server.

The GET is noted the moment it arrives (before anything is awaited) and released once the server has
answered it with its headers (the stream exists) or it ended otherwise; a later request of the same
session waits for the GETs noted before it, at most ORDER_WAIT_SECONDS. Requests of one session that
land in different processes have no common order to keep (each process keeps its own arrivals).
"""

from __future__ import annotations

import asyncio
import contextlib

ORDER_WAIT_SECONDS = 2.0
_opening: dict[tuple[str, str], list[asyncio.Event]] = {}


def stream_arrived(path: str, session_id: str) -> asyncio.Event:
    """Note a GET stream of the session as opening; set the event it returns once it is open."""
    opened = asyncio.Event()
    _opening.setdefault((path, session_id), []).append(opened)
    return opened


def stream_settled(path: str, session_id: str, opened: asyncio.Event) -> None:
    """The GET stream is open, or will never be: later requests need not wait for it."""
    opened.set()
    line = _opening.get((path, session_id), [])
    if opened in line:
        line.remove(opened)
    if not line:
        _opening.pop((path, session_id), None)


def streams_before(path: str, session_id: str) -> list[asyncio.Event]:
    """The session's GET streams still opening when a request arrives (take it before any await)."""
    return list(_opening.get((path, session_id), ()))


async def after(streams: list[asyncio.Event]) -> None:
    """Wait until those streams are open (or ORDER_WAIT_SECONDS have passed)."""
    if not streams:
        return
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.gather(*(opened.wait() for opened in streams)), ORDER_WAIT_SECONDS)
