"""Test settings: the same real PostgreSQL and Redis, embedded under var/test so a running `make run`
keeps its own data."""

import os

from registry_site.settings.env import BASE_DIR

os.environ.setdefault("REGISTRY_VAR_DIR", str(BASE_DIR / "var" / "test"))

from registry_site.settings.base import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # speed only; never in production
CACHES["default"]["KEY_PREFIX"] = "registry-test"  # noqa: F405
METRICS_API_KEY = ""  # the registry reports its own metrics only where a test turns it on

# Concurrent runs on one machine (TOX_PARALLEL_ENV names each, as it names their test database) each get a
# Redis database of their own, so one run's per-test flush never empties another's buffers and queues.
if os.environ.get("TOX_PARALLEL_ENV") and not os.environ.get("REDIS_URL"):
    import zlib
    from urllib.parse import urlsplit, urlunsplit

    _database = 1 + zlib.crc32(os.environ["TOX_PARALLEL_ENV"].encode()) % 15
    REDIS_URL = urlunsplit(urlsplit(REDIS_URL)._replace(path=f"/{_database}"))  # noqa: F405
    CACHES["default"]["LOCATION"] = REDIS_URL  # noqa: F405
    CELERY_BROKER_URL = REDIS_URL
    CHANNEL_LAYERS["default"]["CONFIG"]["hosts"][0]["address"] = REDIS_URL  # noqa: F405
