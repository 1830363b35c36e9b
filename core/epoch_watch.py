"""The cache epochs pushed to every process, so a request reads none of them from Redis in the steady state.

A thread per process subscribes to the epochs' channel. A bump (core/epochs.py) sets the new epoch and
publishes it in one round trip, so every subscribed process learns it within a round trip. Every
SNAPSHOT_SECONDS the thread also has Redis publish a snapshot of every epoch it watches, to a channel of
this process alone (one script: read, start the missing ones, publish). Redis writes a subscriber's messages
in the order it ran the commands, so snapshots and bumps arrive in order on the one connection, and a
snapshot proves that every bump that ran before it has arrived.

The rule: an epoch is served from the process only while the last snapshot that arrived was asked for less
than TRUST_SECONDS ago. A lost push (the subscription broken, the thread stalled, Redis restarted or
flushed) therefore costs at most TRUST_SECONDS before every caller reads Redis again, as without the push;
never a stale right served longer. A process's own bump is read from Redis until its message comes back.

Sessions the gateway ended are pushed the same way (`gone_message`), for the gateway's own cache of who
owns a session (gateway/sessions.py): `on_gone` callbacks run for each, and `on_reset` ones whenever the
pushed state may have missed messages (a new subscription).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable

from core.redis_clients import sync_client

logger = logging.getLogger(__name__)

SNAPSHOT_SECONDS = 0.25
TRUST_SECONDS = 0.75
_RECONNECT_SECONDS = 0.5

# KEYS: the epochs; ARGV[1]: the channel; ARGV[2]: when it was asked (this process's clock); ARGV[3..]:
# a new epoch for each key that has none (a fresh or flushed Redis).
_SNAPSHOT = """
for i, key in ipairs(KEYS) do redis.call('SET', key, ARGV[i + 2], 'NX') end
local values = redis.call('MGET', unpack(KEYS))
redis.call('PUBLISH', ARGV[1], cjson.encode({asked = ARGV[2], keys = KEYS, values = values}))
return #values
"""


def channel() -> str:
    """The epochs' channel of this Redis database (channels are shared by every database of a server)."""
    kwargs = sync_client().connection_pool.connection_kwargs
    return f"registry:epochs:{kwargs.get('db', 0)}"


class EpochWatch:
    def __init__(self):
        self._lock = threading.Lock()
        self._keys: set[str] = set()
        self._values: dict[str, bytes] = {}
        self._own_bumps: dict[str, tuple[bytes, float]] = {}  # bumped here: (value, when) until it is back
        self._trusted_until = 0.0
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._stopping = threading.Event()
        self.on_gone: list[Callable[[str], None]] = []
        self.on_reset: list[Callable[[], None]] = []

    # Reads -----------------------------------------------------------------------------------------

    def values(self, keys: list[str]) -> list[bytes] | None:
        """The epochs of `keys` as last pushed, or None when they must be read from Redis."""
        self._ensure_running(keys)
        if time.monotonic() >= self._trusted_until:
            return None
        with self._lock:
            if any(key in self._own_bumps or key not in self._values for key in keys):
                return None
            return [self._values[key] for key in keys]

    def trusted(self) -> bool:
        """Whether pushed state (epochs, ended sessions) is current within TRUST_SECONDS."""
        return time.monotonic() < self._trusted_until

    # Writes ----------------------------------------------------------------------------------------

    def bump(self, key: str, value: bytes) -> None:
        """Set `key` to `value` and push it to every process, in one round trip (raises on Redis errors)."""
        with self._lock:
            self._own_bumps[key] = (value, float("inf"))
        try:
            pipe = sync_client().pipeline(transaction=False)  # the SET stands even if PUBLISH is refused
            pipe.set(key, value)
            pipe.publish(channel(), json.dumps({"key": key, "value": value.decode()}))
            stored, _ = pipe.execute(raise_on_error=False)
            if isinstance(stored, Exception):
                raise stored
        finally:  # done or not, any snapshot asked from now on shows what Redis holds
            with self._lock:
                if self._own_bumps.get(key, (None,))[0] == value:
                    self._own_bumps[key] = (value, time.monotonic())

    def gone_message(self, session_key: str) -> tuple[str, str]:
        """The channel and message that tell every process a session ended (gateway/sessions.py)."""
        return channel(), json.dumps({"gone": session_key})

    def forget(self) -> None:
        """Serve nothing pushed until the next snapshot (after Redis lost its data, say)."""
        with self._lock:
            self._values.clear()
            self._trusted_until = 0.0
        for callback in self.on_reset:
            callback()

    # The thread ------------------------------------------------------------------------------------

    def _ensure_running(self, keys: list[str]) -> None:
        if any(key not in self._keys for key in keys):
            with self._lock:
                self._keys.update(keys)
        if self._thread is not None and self._pid == os.getpid():
            return
        with self._lock:
            if self._thread is not None and self._pid == os.getpid():
                return
            self._pid = os.getpid()  # a forked child starts its own thread
            self._values.clear()
            self._own_bumps.clear()
            self._trusted_until = 0.0
            self._thread = threading.Thread(target=self._run, name="epoch-watch", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._subscribed()
            except Exception:  # noqa: BLE001 - Redis away: callers read it themselves meanwhile
                logger.debug("Epoch subscription lost; reconnecting.", exc_info=True)
            self.forget()
            self._stopping.wait(_RECONNECT_SECONDS)

    def _subscribed(self) -> None:
        client = sync_client()
        own = f"{channel()}:{os.getpid()}:{id(self)}"
        snapshot = client.register_script(_SNAPSHOT)
        pubsub = client.pubsub(ignore_subscribe_messages=True)
        try:
            pubsub.subscribe(channel(), own)
            for callback in self.on_reset:  # messages sent before the subscription are lost to us
                callback()
            next_snapshot = 0.0
            while not self._stopping.is_set():
                now = time.monotonic()
                if now >= next_snapshot:
                    keys = list(self._keys)
                    if keys:
                        fresh = [os.urandom(8).hex() for _ in keys]
                        snapshot(keys=keys, args=[own, repr(now), *fresh], client=client)
                    next_snapshot = now + SNAPSHOT_SECONDS
                message = pubsub.get_message(timeout=max(0.0, next_snapshot - time.monotonic()))
                if message is not None and message["type"] == "message":
                    self._receive(json.loads(message["data"]))
        finally:
            pubsub.close()

    def _receive(self, message: dict) -> None:
        if "gone" in message:
            for callback in self.on_gone:
                callback(message["gone"])
            return
        with self._lock:
            if "key" in message:
                key, value = message["key"], message["value"].encode()
                self._values[key] = value
                if self._own_bumps.get(key, (None,))[0] == value:
                    del self._own_bumps[key]
                return
            asked = float(message["asked"])
            for key, value in zip(message["keys"], message["values"], strict=True):
                self._values[key] = value.encode()
                if self._own_bumps.get(key, (None, asked))[1] < asked:  # asked after the bump ran
                    del self._own_bumps[key]
            self._trusted_until = asked + TRUST_SECONDS


WATCH = EpochWatch()
