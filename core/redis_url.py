"""REDIS_URL, read once for every user of Redis (Celery, the channel layer, the cache, rate limits, the
metric buffer, epochs, gateway sessions).

Two forms, as the libraries in use spell them:

    redis://[:password@]host:port/db                      one Redis server
    sentinel://[:password@]host:port/db;sentinel://host:port;...   Redis Sentinel (kombu's format)

With Sentinel, each `sentinel://` names one Sentinel; the master they watch is REDIS_SENTINEL_MASTER,
the password and db of the first URL are the Redis servers' (master and replicas alike), and
REDIS_SENTINEL_PASSWORD, when set, is the Sentinels' own. Every client asks the Sentinels for the master
and asks again when it fails or turns into a replica, so a failover needs no restart."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

SENTINEL_SCHEME = "sentinel"
SENTINEL_PORT = 26379


class RedisUrlError(ValueError):
    """REDIS_URL cannot be used; the message says what to change."""


@dataclass(frozen=True)
class RedisTarget:
    url: str
    sentinels: tuple[tuple[str, int], ...]  # empty: one Redis server at `url`
    master_name: str
    password: str | None
    db: int
    sentinel_password: str | None

    @property
    def uses_sentinel(self) -> bool:
        return bool(self.sentinels)

    def connection_kwargs(self) -> dict:
        """What a client of the master needs beyond the Sentinels: password and db."""
        return {"password": self.password, "db": self.db}

    def sentinel_kwargs(self) -> dict:
        """Options of the connections to the Sentinels themselves."""
        kwargs = {"socket_timeout": 2, "socket_connect_timeout": 2}
        if self.sentinel_password:
            kwargs["password"] = self.sentinel_password
        return kwargs


def parse(url: str, *, master_name: str = "mymaster", sentinel_password: str = "") -> RedisTarget:
    parts = [part.strip() for part in url.split(";") if part.strip()]
    if not parts:
        raise RedisUrlError("REDIS_URL is empty")
    first = urlsplit(parts[0])
    if first.scheme != SENTINEL_SCHEME:
        if len(parts) > 1:
            raise RedisUrlError("REDIS_URL: only sentinel:// URLs may be joined with ';'")
        return RedisTarget(url, (), master_name, None, 0, None)
    sentinels = []
    for part in parts:
        split = urlsplit(part)
        if split.scheme != SENTINEL_SCHEME or not split.hostname:
            raise RedisUrlError(f"REDIS_URL: {part!r} is not sentinel://host:port")
        try:
            port = split.port or SENTINEL_PORT
        except ValueError as exc:
            raise RedisUrlError(f"REDIS_URL: {part!r} has no valid port") from exc
        sentinels.append((split.hostname, port))
    db_text = first.path.strip("/") or "0"
    if not db_text.isdigit():
        raise RedisUrlError(f"REDIS_URL: the database of {parts[0]!r} must be a number")
    if not master_name:
        raise RedisUrlError("REDIS_SENTINEL_MASTER is empty: name the master the Sentinels watch")
    password = unquote(first.password) if first.password else None
    return RedisTarget(url, tuple(sentinels), master_name, password, int(db_text), sentinel_password or None)
