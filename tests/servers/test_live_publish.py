"""Health changes are published on the process's one event loop: a burst of publishes from synchronous
code (a worker's checks) shares the channel layer's Redis connections instead of opening one each.

Connections are counted where this process opens them (redis-py's asyncio connection, which the channel
layer uses): the Redis server's own count takes in every other test process's connections too."""

import pytest
from redis.asyncio.connection import Connection

from servers.live import publish

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_burst_of_publishes_shares_its_redis_connections(monkeypatch):
    publish._send({"type": publish.MESSAGE_TYPE, "path": "/warm", "enabled": False, "entry": None})
    opened = []
    connect = Connection._connect

    async def counted(self):
        opened.append(self)
        return await connect(self)

    monkeypatch.setattr(Connection, "_connect", counted)

    for n in range(30):
        publish._send({"type": publish.MESSAGE_TYPE, "path": f"/s{n}", "enabled": False, "entry": None})

    assert len(opened) <= 1
