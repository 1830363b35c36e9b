"""Channels: the channel layer lives in Redis so websocket fan-out reaches every web process."""

from registry_site.settings.env import env
from registry_site.settings.services import REDIS_URL

CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "registry_site.channel_layer.BlockingPoolChannelLayer",
        # A socket timeout well above the layer's 5 s blocking pop (redis-py's default equals it, and the
        # two racing drop a socket's receive loop).
        "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 15}], "prefix": "registry:channels"},
    }
}

# The health websockets send a keep-alive this often and re-check the session each time; a connection of
# a web process that died stops counting in the statistics after three intervals.
HEALTH_WS_KEEPALIVE_SECONDS = env.int("HEALTH_WS_KEEPALIVE_SECONDS", default=30)

# Redis connection pools per process (registry_site/redis_clients.py and the channel layer) wait this
# long for a free connection when all are busy, instead of failing.
REDIS_POOL_MAX_CONNECTIONS = env.int("REDIS_POOL_MAX_CONNECTIONS", default=100)
REDIS_POOL_TIMEOUT_SECONDS = env.int("REDIS_POOL_TIMEOUT_SECONDS", default=10)
