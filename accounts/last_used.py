"""When each credential was last used: a registry token (by `jti`) and a user's authorized application.

Bearer checks are the hottest path of the registry and the gateway, and most are answered from the
principal cache without a query, so a use is only noted in memory here (a dictionary write), and a
thread of each process writes the notes of the last LAST_USED_FLUSH_SECONDS in one statement per kind
(and once more when the process exits). The times shown are therefore at most that late; nothing is
written for a credential not used since the last flush.

Each kind of credential is written by the app that owns its model: this app writes tokens; the oauth app
registers the writer of applications (oauth/apps.py)."""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections.abc import Callable
from datetime import datetime

from django.conf import settings
from django.db import close_old_connections, connections
from django.db.models import Case, Q, Value, When
from django.utils import timezone

from accounts.choices import AuthMethod
from accounts.models import IssuedToken
from accounts.principal import Principal

logger = logging.getLogger(__name__)

TOKEN = "token"
APPLICATION = "application"  # keyed by (user id, client id)

Writer = Callable[[dict], None]
_writers: dict[str, Writer] = {}


def register(kind: str, writer: Writer) -> None:
    """`writer(marks)` stores `{key: datetime}` of one kind of credential."""
    _writers[kind] = writer


class UseRecorder:
    def __init__(self):
        self._thread: threading.Thread | None = None
        self.reset()
        atexit.register(self.flush)

    def reset(self) -> None:
        """Forget every note: in a forked child, whose parent writes its own (the child's writing thread
        starts with its first note)."""
        self._lock = threading.Lock()
        self._marks: dict[str, dict] = {}

    def note(self, principal: Principal) -> None:
        """A successful check of `principal`'s bearer credential, now."""
        if principal.token_jti:
            self._mark(TOKEN, principal.token_jti)
        elif principal.auth_method == AuthMethod.APPLICATION and principal.user is not None:
            self._mark(APPLICATION, (principal.user.pk, principal.client_id))

    def _mark(self, kind: str, key) -> None:
        now = timezone.now()
        with self._lock:
            self._marks.setdefault(kind, {})[key] = now
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="last-used", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(settings.LAST_USED_FLUSH_SECONDS)
            self.flush()
            connections.close_all()  # this thread's connections only (they are per thread)

    def flush(self) -> None:
        """Write every note taken since the last flush; a failed write is logged and its notes dropped
        (the next use notes the credential again)."""
        with self._lock:
            marks, self._marks = self._marks, {}
        for kind, noted in marks.items():
            try:
                close_old_connections()
                _writers[kind](noted)
            except Exception:
                logger.exception(
                    "Could not record when %d credentials (%s) were last used.", len(noted), kind
                )


def write_tokens(marks: dict[str, datetime]) -> None:
    """One UPDATE for every token noted."""
    stamp(IssuedToken.objects.filter(jti__in=list(marks)), {Q(jti=jti): when for jti, when in marks.items()})


def stamp(rows, noted: dict[Q, datetime]) -> None:
    """Set `last_used_at` of `rows` in one UPDATE: each row the time of the condition it meets."""
    rows.update(last_used_at=Case(*(When(condition, then=Value(when)) for condition, when in noted.items())))


register(TOKEN, write_tokens)
USES = UseRecorder()
os.register_at_fork(after_in_child=USES.reset)
