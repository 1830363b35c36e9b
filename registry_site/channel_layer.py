"""The channels-redis layer with a pool that waits: a burst of websocket handshakes (each joins a group)
queues for a Redis connection instead of failing with MaxConnectionsError and a 500 handshake."""

import redis.asyncio
from channels_redis.core import RedisChannelLayer

from registry_site.redis_clients import pool_options


class BlockingPoolChannelLayer(RedisChannelLayer):
    def create_pool(self, index):
        host = dict(self.hosts[index])
        address = host.pop("address")
        return redis.asyncio.BlockingConnectionPool.from_url(address, **host, **pool_options())
