"""Tools (and prompts) a live list shows that are not pinned as they are (servers/services/pins.py): each
is left out of the answer by gateway/messages.py and reported here once per process and definition,
recorded off the event loop as a pending change, so a server that shows the health check one definition
and live clients another is caught."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict

from django.db import close_old_connections

logger = logging.getLogger(__name__)

REMEMBERED = 4096  # definitions reported by this process, so a repeated list costs no write
_reported: OrderedDict[tuple[str, str, str, str], None] = OrderedDict()
_lock = threading.Lock()


def report(server_path: str, item: dict, digest: str, subject: str = "tool") -> None:
    key = (server_path, subject, item["name"], digest)
    with _lock:
        if key in _reported:
            return
        _reported[key] = None
        while len(_reported) > REMEMBERED:
            _reported.popitem(last=False)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        _record(server_path, item, subject)
        return
    loop.run_in_executor(None, _record, server_path, item, subject)


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
