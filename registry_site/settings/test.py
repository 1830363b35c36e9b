"""Test settings: the same real PostgreSQL and Redis, embedded under var/test so a running `make run`
keeps its own data."""

import os

from registry_site.settings.env import BASE_DIR

os.environ.setdefault("REGISTRY_VAR_DIR", str(BASE_DIR / "var" / "test"))

from registry_site.settings.base import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # speed only; never in production
CACHES["default"]["KEY_PREFIX"] = "registry-test"  # noqa: F405
