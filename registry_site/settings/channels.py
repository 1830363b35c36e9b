"""Channels: the channel layer lives in Redis so websocket fan-out reaches every web process."""

from registry_site.settings.env import env
from registry_site.settings.services import REDIS_TARGET

# Redis connections per pool and process (core/redis_clients.py and the channel layer); the
# synchronous pool waits up to REDIS_POOL_TIMEOUT_SECONDS for a free one.
REDIS_POOL_MAX_CONNECTIONS = env.int("REDIS_POOL_MAX_CONNECTIONS", default=200)
REDIS_POOL_TIMEOUT_SECONDS = env.int("REDIS_POOL_TIMEOUT_SECONDS", default=10)

# A socket timeout well above the layer's 5 s blocking pop (redis-py's default equals it, and the two
# racing drop a socket's receive loop). A burst of handshakes beyond REDIS_POOL_MAX_CONNECTIONS is closed
# with 1013 (servers/consumers.py).
_CHANNEL_POOL = {"socket_timeout": 15, "max_connections": REDIS_POOL_MAX_CONNECTIONS}
if REDIS_TARGET.uses_sentinel:
    _CHANNEL_HOST = {
        "sentinels": list(REDIS_TARGET.sentinels),
        "master_name": REDIS_TARGET.master_name,
        "sentinel_kwargs": REDIS_TARGET.sentinel_kwargs(),
        **REDIS_TARGET.connection_kwargs(),
        **_CHANNEL_POOL,
    }
else:
    _CHANNEL_HOST = {"address": REDIS_TARGET.url, **_CHANNEL_POOL}

CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [_CHANNEL_HOST], "prefix": "registry:channels"},
    }
}

# The health websockets send a keep-alive this often and re-check the session each time; a connection of
# a web process that died stops counting in the statistics after three intervals.
HEALTH_WS_KEEPALIVE_SECONDS = env.int("HEALTH_WS_KEEPALIVE_SECONDS", default=30)
