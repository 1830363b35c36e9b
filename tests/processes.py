"""Real child processes of a test (uvicorn web servers, Celery workers, one-off scripts) on the test run's own
database and Redis."""

import subprocess
import sys
import time
from urllib.parse import urlsplit, urlunsplit

import requests
from django.conf import settings
from django.db import connection

from runtime.supervisor import asgi_server
from tests.conftest import PROJECT_DIR, clean_env, unused_port

START_TIMEOUT = 120


def child_env() -> dict:
    """The settings of this test run (its test database, its Redis, its keys) for child processes."""
    url = urlsplit(settings.DATABASE_URL)
    database_url = urlunsplit(url._replace(path=f"/{connection.settings_dict['NAME']}"))
    return clean_env(
        DJANGO_SETTINGS_MODULE="registry_site.settings.test",
        DATABASE_URL=database_url,
        REDIS_URL=settings.REDIS_URL,
        SECRET_KEY=settings.SECRET_KEY,
        JWT_SIGNING_KEY=settings.JWT_SIGNING_KEY,
        LOG_LEVEL="WARNING",
        PYTHONUNBUFFERED=1,
    )


def start(*args: str, log, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", *args],
        cwd=PROJECT_DIR,
        env={**child_env(), **(env or {})},
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def wait_healthy(port: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        assert process.poll() is None, "the web server exited"
        try:
            # a first answer may be slow while the process loads the embedding model beside it
            if requests.get(f"http://127.0.0.1:{port}/health", timeout=10).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"the web server on {port} never became healthy")


def wait_worker_ready(log_path, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        assert process.poll() is None, log_path.read_text()
        if "ready" in log_path.read_text():
            return
        time.sleep(0.3)
    raise AssertionError(f"the worker never became ready:\n{log_path.read_text()}")


def free_ports(count: int) -> list[int]:
    """`count` different free ports, by the one rule of tests/conftest.unused_port."""
    ports: list[int] = []
    while len(ports) < count:
        ports.append(unused_port(frozenset(ports)))
    return ports


class ProcessGroup:
    """Child processes started with `start`, each logging to its own file under `log_dir`; stopped (and
    killed if they linger) by `stop`, which the fixtures call however the test ends."""

    def __init__(self, log_dir):
        self.log_dir = log_dir
        self.processes: list[subprocess.Popen] = []
        self.logs = []

    def start(self, name: str, *args: str, env: dict | None = None) -> subprocess.Popen:
        log_path = self.log_dir / f"{name}.log"
        self.logs.append(log_path.open("w"))
        process = start(*args, log=self.logs[-1], env=env)
        process.log_path = log_path
        self.processes.append(process)
        return process

    def web(self, name: str, port: int, application: str, env: dict | None = None) -> subprocess.Popen:
        """A web server of `application` as `make run` starts one (runtime.supervisor)."""
        command = asgi_server(application, "127.0.0.1", port)
        # A connection a test left open holds a stopping process for the grace only: 2 s, not 10.
        return self.start(name, *command[2:], env={"WEB_SHUTDOWN_GRACE_SECONDS": "2", **(env or {})})

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
        for log in self.logs:
            log.close()
