"""Tools (and prompts) a live list shows that are not pinned as they are (servers/services/pins.py): each
is left out of the answer by gateway/messages.py and reported here once per process and definition,
recorded off the event loop as a pending change, so a server that shows the health check one definition
and live clients another is caught.

The answer that left a tool out is held until its sighting is recorded (`watching` and `settling`, put
around every gateway request by gateway/front.py): the record moves the trust epoch, so no call of the
withheld tool, from this client or any other, on any process, reaches the server after the list that
withheld it was answered."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from contextvars import ContextVar

from django.db import close_old_connections

logger = logging.getLogger(__name__)

REMEMBERED = 4096  # definitions reported by this process, so a repeated list costs no write
# each reported definition -> its record while under way (None once done, or recorded in a thread)
_reported: OrderedDict[tuple[str, str, str, str], asyncio.Future | None] = OrderedDict()
_lock = threading.Lock()
_pending: ContextVar[list | None] = ContextVar("pins_seen_pending", default=None)


def report(server_path: str, item: dict, digest: str, subject: str = "tool", *, held: bool = False) -> None:
    """Record a definition a live list showed that is not the pinned one. `held`: whether the trust this
    request judged by already holds a change of that name. What this process reported before is not
    written again while the trust shows it held; when it does not (the server was removed and registered
    again, so its pins and changes are new), it is recorded again."""
    key = (server_path, subject, item["name"], digest)
    with _lock:
        recording = _reported.get(key)
        if key in _reported and (held or (recording is not None and not recording.done())):
            _wait_for(recording)  # reported before: this answer waits for that record too
            return
        _reported[key] = None
        _reported.move_to_end(key)
        while len(_reported) > REMEMBERED:
            _reported.popitem(last=False)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # in a thread: recorded before the answer goes on
        _record(server_path, item, subject)
        return
    recording = loop.run_in_executor(None, _record, server_path, item, subject)
    with _lock:
        if key in _reported:
            _reported[key] = recording
    _wait_for(recording)


def watching() -> list:
    """The records this request's answer must wait for (filled by `report`)."""
    pending: list = []
    _pending.set(pending)
    return pending


def settling(send, pending: list):
    """`send`, each message held until every sighting this request reported is recorded."""

    async def sending(message):
        if pending:
            waited = [future for future in pending if future.get_loop() is asyncio.get_running_loop()]
            pending.clear()
            await asyncio.gather(*waited, return_exceptions=True)
        await send(message)

    return sending


def _wait_for(recording: asyncio.Future | None) -> None:
    pending = _pending.get()
    if recording is not None and not recording.done() and pending is not None:
        pending.append(recording)


def forget() -> None:
    """Tests: report again what this process reported before."""
    with _lock:
        _reported.clear()


def _record(server_path: str, item: dict, subject: str) -> None:
    from servers.models import Server
    from servers.services.pins import pin_seen

    close_old_connections()
    try:
        server = Server.objects.filter(path=server_path).first()
        if server is not None:
            pin_seen(server, item, subject=subject)
    except Exception:  # the list was cut all the same; the next look reports it again after a restart
        logger.warning("could not record a changed %s of %s", subject, server_path, exc_info=True)
    finally:
        close_old_connections()
