"""The one reader of the process environment: every setting that comes from outside goes through here."""

from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent.parent

env = environ.Env()


def var_dir() -> Path:
    """Where the process keeps what it makes (embedded servers' data, keys, the embedding graph): read here,
    where nothing starts, so tools outside Django (benchmarks, the test lab) find the folder settings use."""
    return Path(env.str("REGISTRY_VAR_DIR", default=str(BASE_DIR / "var"))).resolve()


class ConfigurationError(ImproperlyConfigured):
    """A setting is missing or unusable; the message is one line that names it and says what to do."""


def env_required(name: str, hint: str) -> str:
    """Return a variable that must be set outside the embedded default, or stop with one clear line."""
    value = env.str(name, default="")
    if not value:
        raise ConfigurationError(f"{name} is not set: {hint}")
    return value
