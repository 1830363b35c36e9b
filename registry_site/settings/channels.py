"""Channels: the channel layer lives in Redis so websocket fan-out reaches every web process."""

from registry_site.settings.services import REDIS_URL

CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [REDIS_URL], "prefix": "registry:channels"},
    }
}
