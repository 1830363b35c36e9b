"""The health websockets: a snapshot of health entries on connect, then each change as it happens.

- `/api/health/ws/health_status` needs a logged-in session (closed with 4401 otherwise) and shows the
  servers that session may see, disabled ones included.
- `/ws/health_status` needs nothing and shows enabled servers only.

Messages are JSON objects keyed by server path, `{"/path": {status, last_checked_iso, num_tools}}`; a
server that left the client's view (deleted, or disabled on the public socket) comes as `{"/path": null}`.
Control messages carry `type` instead of paths (paths always start with "/"): a client's
`{"type": "ping"}` is answered with `{"type": "pong"}`, the server sends `{"type": "keepalive"}` every
HEALTH_WS_KEEPALIVE_SECONDS and re-checks the session each time.
"""

import asyncio
import json
import logging

import redis
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.db import DatabaseError

from accounts.authentication import principal_from_session_key
from core.untrusted import InputRejected, json_loads
from servers.live import stats
from servers.live.entries import public_entry
from servers.live.publish import GROUP
from servers.policies import tool_counts
from servers.selectors import health_snapshot

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_TRY_AGAIN_LATER = 1013  # RFC 6455: the server is overloaded (Redis did not answer in time)
PING_ONLY = 'The only message a client sends is {"type": "ping"}.'


class PublicHealthStatusConsumer(AsyncWebsocketConsumer):
    """Health of enabled servers, for anyone."""

    groups = [GROUP]
    accepted = False

    async def websocket_connect(self, message) -> None:
        """Joining the group and the snapshot need Redis and the database; when they cannot serve the
        handshake in time the socket is closed with 1013 (try again later), never answered with a 500."""
        try:
            await super().websocket_connect(message)
        except (redis.RedisError, DatabaseError, OSError, TimeoutError):
            logger.warning("websocket handshake refused: Redis or the database unavailable", exc_info=True)
            if not self.accepted:
                await self.accept()
            await self.close(code=CLOSE_TRY_AGAIN_LATER)

    async def accept(self, subprotocol=None, headers=None) -> None:
        await super().accept(subprotocol, headers)
        self.accepted = True

    async def connect(self) -> None:
        if not await self.authorize():
            await self.accept()
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        await self.accept()
        await stats.connection_opened(self.channel_name)
        await self.send_json(await database_sync_to_async(self.snapshot)())
        self.keepalive = asyncio.create_task(self.keep_alive())

    async def disconnect(self, code) -> None:
        if keepalive := getattr(self, "keepalive", None):
            keepalive.cancel()
        await stats.connection_closed(self.channel_name)

    async def receive(self, text_data=None, bytes_data=None) -> None:
        try:
            message = json_loads(text_data if text_data is not None else bytes_data)
        except InputRejected:
            message = None
        if isinstance(message, dict) and message.get("type") == "ping":
            await self.send_json({"type": "pong"})
        else:
            await self.send_json(
                {"type": "error", "detail": 'The only message a client sends is {"type": "ping"}.'}
            )

    async def health_changed(self, event: dict) -> None:
        """A change published by `servers.live.publish` (from any worker or web process)."""
        if self.shows(event):
            await self.send_json({event["path"]: await self.entry_for(event)})

    async def keep_alive(self) -> None:
        while True:
            await asyncio.sleep(settings.HEALTH_WS_KEEPALIVE_SECONDS)
            if not await self.authorize():
                await self.closed_quietly(CLOSE_UNAUTHENTICATED)
                return
            await stats.connection_seen(self.channel_name)
            await self.channel_layer.group_add(GROUP, self.channel_name)  # memberships expire in a day
            if not await self.send_json({"type": "keepalive"}):
                return

    async def send_json(self, content: dict) -> bool:
        """Counted before it goes out, so a client that has a message finds it in the statistics. A client
        that has gone is an ordinary end, not an error: its disconnect ends the consumer. Whether it went."""
        await stats.messages_sent()
        try:
            await self.send(text_data=json.dumps(content, separators=(",", ":")))
        except OSError:  # the server's ClientDisconnected: the socket closed under the send
            logger.debug("health websocket %s closed before a message", self.channel_name)
            return False
        return True

    async def closed_quietly(self, code: int) -> None:
        try:
            await self.close(code=code)
        except OSError:
            logger.debug("health websocket %s already closed", self.channel_name)

    # What this socket may show; the session socket narrows it to its principal.

    async def authorize(self) -> bool:
        return True

    def snapshot_principal(self):
        return None

    def snapshot(self) -> dict:
        """The entries sent on connect (sync: run in a thread)."""
        return health_snapshot(self.snapshot_principal())

    def shows(self, event: dict) -> bool:
        return True

    async def entry_for(self, event: dict) -> dict | None:
        """What this socket sends of a change: the public fields of an enabled server, else None (gone)."""
        return public_entry(event["entry"]) if event["enabled"] else None


class HealthStatusConsumer(PublicHealthStatusConsumer):
    """Health of the servers a logged-in session may see."""

    principal = None

    async def authorize(self) -> bool:
        session_key = self.scope.get("cookies", {}).get(settings.SESSION_COOKIE_NAME)
        self.principal = await database_sync_to_async(principal_from_session_key)(session_key)
        if self.principal is not None:
            self.sees_all, self.paths = self.principal.server_visibility()
        return self.principal is not None

    def snapshot_principal(self):
        return self.principal

    def shows(self, event: dict) -> bool:
        return self.sees_all or event["path"] in self.paths

    async def entry_for(self, event: dict) -> dict | None:
        """The whole entry, its tool count cut to the tools this session sees (servers/policies.py)."""
        entry, path = event["entry"], event["path"]
        if entry is None or self.principal.shown_tools(path) is None:
            return entry
        counts = await database_sync_to_async(tool_counts)(self.principal, [path])
        return {**entry, "num_tools": counts[path]}
