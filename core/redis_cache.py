"""Django's Redis cache on the process's one synchronous Redis client (core/redis_clients.py),
so the cache follows a Sentinel failover as every other use of Redis does."""

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient

from core.redis_clients import sync_client


class _SharedPoolClient(RedisCacheClient):
    def _get_connection_pool(self, write):
        return sync_client().connection_pool


class RedisCache(DjangoRedisCache):
    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = _SharedPoolClient
