"""Health changes are published on the process's one event loop: a burst of publishes from synchronous
code (a worker's checks) shares the channel layer's Redis connections instead of opening one each."""

import pytest
import redis
from django.conf import settings

from servers.live import publish

pytestmark = pytest.mark.django_db(transaction=True)


def _connections_received() -> int:
    return redis.Redis.from_url(settings.REDIS_URL).info("stats")["total_connections_received"]


def test_a_burst_of_publishes_shares_its_redis_connections():
    publish._send({"type": publish.MESSAGE_TYPE, "path": "/warm", "enabled": False, "entry": None})
    before = _connections_received()

    for n in range(30):
        publish._send({"type": publish.MESSAGE_TYPE, "path": f"/s{n}", "enabled": False, "entry": None})

    assert _connections_received() - before <= 2  # (the count's own connection included)
