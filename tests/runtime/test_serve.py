"""`manage.py serve` (what `make run` runs) from a new var/ folder: the whole group starts on fresh
embedded servers, shares one database and one Redis, stops cleanly on Ctrl-C, starts again on the kept
data, and goes down whole, embedded servers included, when one of its children dies. The folder starts
with the embedding model's exported graph in it, the test run's (tests/embedding_graph.py): the export
has tests of its own in tests/test_embeddings.py."""

import re
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest
import requests

from tests.conftest import PROJECT_DIR, clean_env
from tests.embedding_graph import link_embedding_graph
from tests.processes import free_ports

pytestmark = pytest.mark.stack


class Serve:
    """A running `manage.py serve` whose output is collected line by line."""

    def __init__(self, var_dir, port, **settings):
        self.port = port
        self.metrics_port, self.scrape_port = free_ports(2)
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "serve"],
            cwd=PROJECT_DIR,
            env=clean_env(
                REGISTRY_VAR_DIR=var_dir,
                REGISTRY_PORT=port,
                METRICS_SERVICE_PORT=self.metrics_port,
                OTEL_PROMETHEUS_PORT=self.scrape_port,
                CELERY_WORKER_CONCURRENCY=1,
                METRICS_API_KEY_REGISTRY=METRICS_KEY,
                **settings,
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, pattern: str, timeout: float = 150) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if re.search(pattern, self.output()):
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.2)
        raise AssertionError(f"{pattern!r} never appeared:\n{self.output()}")

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def descendants(self) -> list[psutil.Process]:
        return psutil.Process(self.process.pid).children(recursive=True)

    def interrupt(self, timeout: float = 60) -> int:
        self.process.send_signal(signal.SIGINT)
        return self.process.wait(timeout)


METRICS_KEY = "mk_serve-test-key"


def metrics_round_trip(serve: Serve, admin: requests.Session) -> tuple[requests.Response, float, str]:
    """Post a batch to the metrics port with the key from METRICS_API_KEY_REGISTRY; return the answer,
    the seconds until its row shows in the admin, and the scrape output of that moment."""
    batch = {
        "service": "registry",
        "version": "test",
        "metrics": [
            {
                "type": "auth_request",
                "value": 1,
                "duration_ms": 7,
                "dimensions": {"success": True, "method": "jwt", "server": "/serve-round-trip"},
            }
        ],
    }
    posted = time.monotonic()
    answer = requests.post(
        f"http://127.0.0.1:{serve.metrics_port}/metrics",
        json=batch,
        headers={"X-API-Key": METRICS_KEY},
        timeout=10,
    )
    waited = None
    while time.monotonic() - posted < 15:
        listing = admin.get(serve.url("/admin/metrics/authmetric/?q=/serve-round-trip"), timeout=10)
        if "/serve-round-trip" in listing.text:
            waited = time.monotonic() - posted
            break
        time.sleep(0.25)
    scrape = requests.get(f"http://127.0.0.1:{serve.scrape_port}/metrics", timeout=10).text
    return answer, waited, scrape


def embedded_server_processes(var_dir) -> list[psutil.Process]:
    """postgres and redis-server processes whose command line names this var folder."""
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if str(var_dir) in cmdline and proc.info["name"] in ("postgres", "redis-server"):
            found.append(proc)
    return found


def admin_login(serve: Serve, username: str, password: str, session=None) -> requests.Response:
    session = session or requests.Session()
    session.get(serve.url("/admin/login/"), timeout=10)
    return session.post(
        serve.url("/admin/login/?next=/admin/"),
        data={
            "username": username,
            "password": password,
            "csrfmiddlewaretoken": session.cookies["csrftoken"],
            "next": "/admin/",
        },
        headers={"Referer": serve.url("/admin/login/")},
        allow_redirects=False,
        timeout=10,
    )


# It boots the whole group from nothing (initdb, every migration, five processes), then again on the kept
# data: 100-140 s on a 2-core machine running the rest of the suite, the slowest test; twice the suite's
# limit for it alone.
@pytest.mark.timeout(600)
def test_serve_runs_the_whole_group_on_fresh_embedded_servers_stops_cleanly_and_a_dead_child_stops_it(
    tmp_path, free_port
):
    var_dir = tmp_path / "var"
    link_embedding_graph(var_dir / "models")  # the run's export: the only file there at the start
    serve = Serve(var_dir, free_port)
    try:
        serve.wait_for(r"Press Ctrl-C to stop")
        serve.wait_for(r"worker\s+\| .*ready")

        health = requests.get(serve.url("/health"), timeout=10)
        login_page = requests.get(serve.url("/admin/login/"), timeout=10)
        username, password = (var_dir / "admin_password").read_text().split()
        admin = requests.Session()
        login = admin_login(serve, username, password, admin)
        metrics_answer, row_after, scrape = metrics_round_trip(serve, admin)
        children = serve.descendants()
        child_envs = [
            proc.environ()
            for proc in children
            if any(
                part in " ".join(proc.cmdline())
                for part in ("runtime.web_server", "worker", "beat", "metrics_exporter")
            )
        ]
    finally:
        code = serve.interrupt()

    assert health.status_code == 200
    assert health.json() == {"status": "healthy", "service": "mcp-gateway-registry"}
    assert login_page.status_code == 200
    assert "MCP Gateway Registry" in login_page.text
    assert login.status_code == 302
    assert login.headers["Location"] == "/admin/"
    assert f"admin password generated and written to {var_dir / 'admin_password'}" in serve.output()
    # the metrics service: a batch posted to its port is a row within 6 s and counted in the scrape
    assert metrics_answer.status_code == 202
    assert metrics_answer.json()["accepted"] == 1
    assert row_after is not None and row_after < 6
    assert 'mcp_auth_requests_total{method="jwt",service="registry",success="true"} 1.0' in scrape
    # web, metrics web, exporter, worker and beat all received the same database, Redis and secret key
    assert len(child_envs) >= 5
    assert len({env["DATABASE_URL"] for env in child_envs}) == 1
    assert len({env["REDIS_URL"] for env in child_envs}) == 1
    assert len({env["SECRET_KEY"] for env in child_envs}) == 1
    assert str(var_dir) in child_envs[0]["DATABASE_URL"]
    # Ctrl-C stopped everything: the group, and the embedded servers it held
    assert code == 0
    assert "supervisor | stopped" in serve.output()
    assert [proc for proc in children if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE] == []
    assert embedded_server_processes(var_dir) == []

    # The next run starts cleanly on the kept data: same admin, no new password; and a child that dies
    # takes the whole group down, the embedded servers with it. One web and one metrics process (the first
    # run had the default, one per core, on each port): nothing here depends on how many.
    again = Serve(var_dir, free_port, WEB_CONCURRENCY=1, METRICS_CONCURRENCY=1)
    try:
        again.wait_for(r"Press Ctrl-C to stop")
        relogin = admin_login(again, username, password)
        beat = next(proc for proc in again.descendants() if "beat" in " ".join(proc.cmdline()))
        beat.kill()
        second_code = again.process.wait(60)
    finally:
        if again.process.poll() is None:
            again.interrupt()

    assert relogin.status_code == 302
    assert "No migrations to apply." in again.output()
    assert "generated" not in again.output()
    assert f"admin password in {var_dir / 'admin_password'}" in again.output()
    assert second_code == 1
    assert re.search(r"beat exited with code -9; stopping the rest", again.output())
    assert embedded_server_processes(var_dir) == []
