"""Test settings: the same real PostgreSQL and Redis, embedded under var/test so a running `make run`
keeps its own data."""

import os

from registry_site.settings.env import BASE_DIR

os.environ.setdefault("REGISTRY_VAR_DIR", str(BASE_DIR / "var" / "test"))

from registry_site.settings.base import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # speed only; never in production
CACHES["default"]["KEY_PREFIX"] = "registry-test"  # noqa: F405
METRICS_API_KEY = ""  # the registry reports its own metrics only where a test turns it on

# Concurrent runs on one machine each get a Redis database of their own, so one run's per-test flush never
# empties another's buffers and queues: the workers of one pytest-xdist run (PYTEST_XDIST_WORKER gw0, gw1, …
# take databases 1, 2, …) and concurrent tox environments (TOX_PARALLEL_ENV, which also names their test
# database). pytest-django gives each xdist worker its own test database.
_xdist_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
_tox_env = os.environ.get("TOX_PARALLEL_ENV", "")
if (_xdist_worker or _tox_env) and not os.environ.get("REDIS_URL"):
    import zlib
    from urllib.parse import urlsplit, urlunsplit

    if _tox_env:
        _database = 1 + zlib.crc32(f"{_tox_env}/{_xdist_worker}".encode()) % 15
    else:
        _database = 1 + int(_xdist_worker.removeprefix("gw") or 0) % 15
    REDIS_URL = urlunsplit(urlsplit(REDIS_URL)._replace(path=f"/{_database}"))  # noqa: F405
    CACHES["default"]["LOCATION"] = REDIS_URL  # noqa: F405
    CELERY_BROKER_URL = REDIS_URL
    CHANNEL_LAYERS["default"]["CONFIG"]["hosts"][0]["address"] = REDIS_URL  # noqa: F405
