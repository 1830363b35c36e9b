"""Shared pieces of the benchmarks: a throw-away registry on its own embedded servers."""

import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import requests

PROJECT_DIR = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def registry_env(var_dir: Path, port: int, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY")}
    env.update(
        REGISTRY_VAR_DIR=str(var_dir),
        REGISTRY_PORT=str(port),
        METRICS_SERVICE_PORT=str(free_port()),
        OTEL_PROMETHEUS_PORT=str(free_port()),
        LOG_LEVEL="WARNING",
    )
    env.update(extra)
    return env


def manage(env: dict, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(result.stderr)
    return result.stdout


class Serve:
    """`manage.py serve` in the background until the block ends."""

    def __init__(self, env: dict, port: int):
        self.env, self.port = env, port

    def __enter__(self):
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--no-migrate"],
            cwd=PROJECT_DIR,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                if requests.get(f"http://127.0.0.1:{self.port}/health", timeout=2).status_code == 200:
                    return self
            except requests.ConnectionError:
                time.sleep(0.1)
        raise RuntimeError("serve did not start")

    def __exit__(self, *exc):
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(60)


def timed(session: requests.Session, url: str, count: int, **kwargs) -> list[float]:
    out = []
    for _ in range(count):
        started = time.perf_counter()
        response = session.get(url, timeout=30, **kwargs)
        out.append(time.perf_counter() - started)
        assert response.status_code == 200, response.text[:200]
    return out


def ms(values: list[float], q: int | None = None) -> float:
    if q is None:
        return statistics.median(values) * 1000
    return statistics.quantiles(values, n=100)[q - 1] * 1000


SERVERS_SEED = """
from servers.models import Server
from accounts.models import User
from accounts.choices import AuthMethod
from accounts.principal import principal_for_user
from accounts.services import user_token_issue
Server.objects.bulk_create(
    [Server(path=f"/bench-{n:05d}", name=f"Bench {n}", description="A benchmark server",
            proxy_pass_url=f"http://127.0.0.1:{10000 + n % 50000}/mcp", tags=["bench"], is_enabled={enabled},
            embedding_dirty=False)
     for n in range({count})], batch_size=2000)
from django.db import connection
with connection.cursor() as cursor:
    cursor.execute("ANALYZE servers_server")  # the statistics autovacuum would gather within a minute
admin = User.objects.create(username="bench-admin", is_superuser=True, is_staff=True)
grant = user_token_issue(principal=principal_for_user(admin, auth_method=AuthMethod.SESSION),
                         requested_scopes=None, expires_in_hours=2, description="bench", admin=True)
print(grant.access_token)
"""


def seed_servers(env: dict, count: int, *, enabled: bool = True) -> str:
    """`count` servers, enabled unless told (not queued for embedding: these benchmarks read, and a worker
    embedding 10,000 rows would share the cores) and an admin; returns the admin's token."""
    seed = SERVERS_SEED.replace("{count}", str(count)).replace("{enabled}", str(enabled))
    return manage(env, "shell", "-c", seed).strip().splitlines()[-1]
