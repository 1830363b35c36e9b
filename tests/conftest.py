"""Shared fixtures. The database is the real embedded PostgreSQL (var/test), Redis the real embedded
Redis; nothing is mocked."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.factories import UserFactory

PROJECT_DIR = Path(__file__).resolve().parent.parent


@pytest.fixture
def user(db):
    return UserFactory()


@pytest.fixture
def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def clean_env(**overrides) -> dict:
    """The environment for a child `manage.py`: no inherited registry settings but those given."""
    names = (
        "DATABASE_URL",
        "REDIS_URL",
        "SECRET_KEY",
        "JWT_SIGNING_KEY",
        "DJANGO_SETTINGS_MODULE",
        "REGISTRY_VAR_DIR",
    )
    env = {k: v for k, v in os.environ.items() if k not in names and not k.startswith("ADMIN_")}
    env.update({k: str(v) for k, v in overrides.items()})
    return env


def run_manage(*args, env: dict, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
