"""Where state lives: PostgreSQL and Redis from the environment, or the embedded servers under var/."""

from core import redis_url
from registry_site.settings.env import ConfigurationError, env, var_dir
from runtime import embedded

VAR_DIR = var_dir()

# DATABASE_URL / REDIS_URL unset: start (or join) the embedded servers under VAR_DIR.
_database_url = env.str("DATABASE_URL", default="")
_redis_url = env.str("REDIS_URL", default="")
EMBEDDED_DATABASE = not _database_url
EMBEDDED_REDIS = not _redis_url
try:
    _embedded = embedded.acquire(VAR_DIR, postgres=EMBEDDED_DATABASE, redis=EMBEDDED_REDIS)
except embedded.EmbeddedServiceError as exc:
    raise ConfigurationError(str(exc)) from exc
DATABASE_URL = _database_url or _embedded.database_url
REDIS_URL = _redis_url or _embedded.redis_url

# REDIS_URL may name Redis Sentinels instead of one server (core/redis_url.py).
REDIS_SENTINEL_MASTER = env.str("REDIS_SENTINEL_MASTER", default="mymaster")
REDIS_SENTINEL_PASSWORD = env.str("REDIS_SENTINEL_PASSWORD", default="")
try:
    REDIS_TARGET = redis_url.parse(
        REDIS_URL, master_name=REDIS_SENTINEL_MASTER, sentinel_password=REDIS_SENTINEL_PASSWORD
    )
except redis_url.RedisUrlError as exc:
    raise ConfigurationError(str(exc)) from exc
