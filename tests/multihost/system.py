"""The registry deployed over lab hosts (tests/multihost/lab.py), as an operator deploys it beyond one
machine: every role started by the image's entry script (`python -m runtime.roles ROLE`) with the
production settings, PostgreSQL and Redis on hosts of their own, nginx in front.

    db        PostgreSQL 16 with pgvector (the server `pgserver` ships), reached over TCP with a password
    redis-a   Redis master + a Sentinel       redis-b, redis-c  Redis replicas + a Sentinel each
    lb        nginx (registry and metrics upstreams)
    web-a/b   the web role and the metrics role
    worker-a/b  the worker role             beat     the beat role
    mcp       a real MCP server of the official SDK (tests/multihost/mcp_host.py)

Redis keeps an append-only file (fsync always), so a stopped Redis comes back with what it had; with two
replicas, a failover still leaves one to confirm metrics (METRICS_REPLICA_ACKS=1).
"""

from __future__ import annotations

import base64
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pgserver
import requests

from tests.databases import dumped_template
from tests.embedding_graph import link_embedding_graph
from tests.multihost.lab import Lab
from tests.nginx import MAIN_CONFIG, nginx_binary
from tests.waiting import wait_for

HOSTS = {
    "db": 10,
    "redis-a": 20,
    "redis-b": 21,
    "redis-c": 22,
    "web-a": 11,
    "web-b": 12,
    "worker-a": 31,
    "worker-b": 32,
    "beat": 35,
    "lb": 40,
    "mcp": 50,
}
WEB_PORT, METRICS_PORT, LB_PORT, LB_METRICS_PORT, MCP_PORT = 8000, 8890, 80, 8890, 9000
REDIS_PORT, SENTINEL_PORT = 6379, 26379
REDIS_HOSTS = SENTINEL_HOSTS = ("redis-a", "redis-b", "redis-c")
PROJECT_DIR = Path(__file__).resolve().parent.parent.parent
PG_BIN = Path(pgserver.__file__).parent / "pginstall" / "bin"
PG_USER = "pgserver"  # the unprivileged user pgserver itself runs PostgreSQL as under root
ADMIN_USER = "ops"
METRICS_SERVICE = "lab"  # the service the metrics API key is issued to
VISIBILITY_TIMEOUT = 15  # seconds before a task of a dead worker is delivered again
HEALTH_TIMEOUT = 40  # a check may wait this long for tools/list (the slow-discovery test needs time)
START_TIMEOUT = 180


def redis_binary() -> str:
    found = shutil.which("redis-server")
    if found is None:
        raise AssertionError(
            "redis-server is not installed. `make test` installs Debian's redis-server when it runs as "
            "root (apt-get install redis-server); install it and run the tests again."
        )
    return found


class System:
    def __init__(self, directory: Path, settings: dict[str, str] | None = None):
        """`settings`: environment variables set for every role beside the lab's own."""
        directory.mkdir(parents=True, exist_ok=True)
        directory.chmod(0o755)
        self.directory = directory
        self.lab = Lab(directory, HOSTS, cwd=PROJECT_DIR)
        self.hosts = self.lab.hosts
        self.db_password = secrets.token_urlsafe(16)
        self.redis_password = secrets.token_urlsafe(16)
        self.admin_password = secrets.token_urlsafe(16)
        self.secret_key = secrets.token_urlsafe(48)
        self.jwt_key = secrets.token_urlsafe(48)
        self.client_id = self.client_secret = self.metrics_key = ""
        self._token: tuple[str, float] | None = None
        self.settings = settings or {}

    # -- addresses ---------------------------------------------------------------------------------

    def address(self, host: str) -> str:
        return self.hosts[host].address

    @property
    def url(self) -> str:
        """The registry through the balancer."""
        return f"http://{self.address('lb')}:{LB_PORT}"

    @property
    def metrics_url(self) -> str:
        return f"http://{self.address('lb')}:{LB_METRICS_PORT}"

    def web_url(self, host: str) -> str:
        return f"http://{self.address(host)}:{WEB_PORT}"

    def metrics_host_url(self, host: str) -> str:
        return f"http://{self.address(host)}:{METRICS_PORT}"

    @property
    def mcp_url(self) -> str:
        return f"http://{self.address('mcp')}:{MCP_PORT}"

    @property
    def redis_url(self) -> str:
        sentinels = [f"sentinel://{self.address(h)}:{SENTINEL_PORT}" for h in SENTINEL_HOSTS]
        sentinels[0] = (
            f"sentinel://:{self.redis_password}@{self.address(SENTINEL_HOSTS[0])}:{SENTINEL_PORT}/0"
        )
        return ";".join(sentinels)

    @property
    def database_url(self) -> str:
        return f"postgresql://registry:{self.db_password}@{self.address('db')}:5432/registry"

    def env(self, host: str, **extra) -> dict:
        """The environment of a role on `host`: the production settings, shared by every pod."""
        var_dir = self.hosts[host].directory / "var"
        var_dir.mkdir(exist_ok=True)
        for shared in ("staticfiles", "models"):
            link = var_dir / shared
            if not link.exists():
                link.symlink_to(self.directory / shared)
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.hosts[host].directory),
            "LANG": "C.UTF-8",
            "PYTHONUNBUFFERED": "1",
            "DJANGO_SETTINGS_MODULE": "registry_site.settings.production",
            "DATABASE_URL": self.database_url,
            "REDIS_URL": self.redis_url,
            "REDIS_SENTINEL_MASTER": "registry",
            "SECRET_KEY": self.secret_key,
            "JWT_SIGNING_KEY": self.jwt_key,
            "ALLOWED_HOSTS": "*",
            "ADMIN_USER": ADMIN_USER,
            "ADMIN_PASSWORD": self.admin_password,
            "REGISTRY_VAR_DIR": str(var_dir),
            "REGISTRY_HOST": "0.0.0.0",
            "REGISTRY_PORT": str(WEB_PORT),
            "METRICS_SERVICE_HOST": "0.0.0.0",
            "METRICS_SERVICE_PORT": str(METRICS_PORT),
            "WEB_CONCURRENCY": "1",
            "METRICS_CONCURRENCY": "1",
            "CELERY_WORKER_CONCURRENCY": "2",
            "CELERY_VISIBILITY_TIMEOUT_SECONDS": str(VISIBILITY_TIMEOUT),
            "HEALTH_CHECK_TIMEOUT_SECONDS": str(HEALTH_TIMEOUT),
            "HEALTH_WS_KEEPALIVE_SECONDS": "5",
            "METRICS_FLUSH_INTERVAL_SECONDS": "1",
            "METRICS_REPLICA_ACKS": "1",
            "SERVICE_TOKEN_LIFETIME_SECONDS": "900",
            "OTEL_PROMETHEUS_ENABLED": "false",
            "LOG_LEVEL": "INFO",
            **self.settings,
            **extra,
        }

    # -- start -------------------------------------------------------------------------------------

    def start(self) -> None:
        self.lab.up()
        self._collect_static()
        self.start_postgres(initialize=True)
        for host in REDIS_HOSTS:
            self.start_redis(host)
        for host in SENTINEL_HOSTS:
            self.start_sentinel(host)
        self.hosts["mcp"].spawn(
            "mcp",
            [sys.executable, "-m", "tests.multihost.mcp_host", "0.0.0.0", str(MCP_PORT)],
            env=self._env(),
        )
        self._migrate()
        for host in ("web-a", "web-b"):
            self.start_role(host, "web")
            self.start_role(host, "metrics")
        for host in ("worker-a", "worker-b"):
            self.start_role(host, "worker")
        self.start_role("beat", "beat")
        self.start_balancer()
        for host in ("web-a", "web-b"):
            self.wait_web(host)
        for host in ("worker-a", "worker-b"):
            self.wait_worker(host)
        wait_for(lambda: self.get(f"{self.url}/health").ok, timeout=30, what="the balancer")
        wait_for(lambda: requests.get(self.mcp_url + "/control/calls", timeout=2).ok, timeout=30, what="mcp")

    def _env(self) -> dict:
        return {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(PROJECT_DIR), "HOME": "/tmp"}

    def _collect_static(self) -> None:
        link_embedding_graph(self.directory / "models")
        static = self.directory / "staticfiles"
        static.mkdir(exist_ok=True)
        env = {
            "PATH": os.environ.get("PATH", ""),
            "DJANGO_SETTINGS_MODULE": "registry_site.settings.production",
            "DATABASE_URL": "postgresql://unused@127.0.0.1:1/unused",
            "REDIS_URL": "redis://127.0.0.1:1/0",
            "SECRET_KEY": "collectstatic",
            "JWT_SIGNING_KEY": "collectstatic",
            "ALLOWED_HOSTS": "*",
            "REGISTRY_VAR_DIR": str(self.directory),
        }
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
            cwd=PROJECT_DIR,
            env=env,
            check=True,
            capture_output=True,
            timeout=300,
        )

    def start_postgres(self, *, initialize: bool = False) -> None:
        host = self.hosts["db"]
        data = host.directory / "data"
        if initialize:
            data.mkdir()
            password_file = host.directory / "pw"
            password_file.write_text(self.db_password + "\n")
            subprocess.run(["chown", "-R", PG_USER, str(host.directory)], check=True)
            host.run(
                [
                    str(PG_BIN / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    "postgres",
                    "--auth-local=trust",
                    "--auth-host=scram-sha-256",
                    f"--pwfile={password_file}",
                    "-E",
                    "UTF8",
                ],
                user=PG_USER,
            )
            with (data / "pg_hba.conf").open("a") as hba:
                hba.write(f"host all all {self.lab.subnet}.0/24 scram-sha-256\n")
        host.spawn(
            "postgres",
            [
                str(PG_BIN / "postgres"),
                "-D",
                str(data),
                "-c",
                f"listen_addresses={host.address}",
                "-c",
                f"unix_socket_directories={host.directory}",
                "-c",
                "max_connections=200",
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
            ],
            user=PG_USER,
        )
        ready = [str(PG_BIN / "pg_isready"), "-h", host.address, "-p", "5432", "-t", "1"]
        wait_for(
            lambda: subprocess.run(host.command(ready), capture_output=True).returncode == 0,
            timeout=60,
            what="PostgreSQL",
        )
        if initialize:
            psql = [
                str(PG_BIN / "psql"),
                "-h",
                str(host.directory),
                "-U",
                "postgres",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                f"CREATE ROLE registry LOGIN PASSWORD '{self.db_password}'",
                "-c",
                "CREATE DATABASE registry OWNER registry",
            ]
            host.run(psql, user=PG_USER)
            self.sql("CREATE EXTENSION vector")

    def stop_postgres(self) -> None:
        host = self.hosts["db"]
        host.run(
            [str(PG_BIN / "pg_ctl"), "stop", "-D", str(host.directory / "data"), "-m", "fast"], user=PG_USER
        )
        host.processes["postgres"].wait(30)

    def start_redis(self, host_name: str) -> None:
        host = self.hosts[host_name]
        data = host.directory / "redis"
        data.mkdir(exist_ok=True)
        argv = [
            redis_binary(),
            "--bind",
            host.address,
            "--port",
            str(REDIS_PORT),
            "--dir",
            str(data),
            "--requirepass",
            self.redis_password,
            "--masterauth",
            self.redis_password,
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--save",
            "",
            "--protected-mode",
            "no",
            "--replica-announce-ip",
            host.address,
        ]
        config = data / "redis.conf"
        if not config.exists():
            primary = host_name == "redis-a"
            config.write_text("" if primary else f"replicaof {self.address('redis-a')} {REDIS_PORT}\n")
        host.spawn("redis", [argv[0], str(config), *argv[1:]])
        wait_for(lambda: self._redis_ping(host.address, REDIS_PORT), timeout=30, what=f"Redis on {host_name}")

    def start_sentinel(self, host_name: str) -> None:
        host = self.hosts[host_name]
        config = host.directory / "sentinel.conf"  # a Sentinel rewrites it as it learns; kept on restart
        if not config.exists():
            config.write_text(
                f"bind {host.address}\nport {SENTINEL_PORT}\nprotected-mode no\n"
                f"sentinel announce-ip {host.address}\n"
                f"sentinel monitor registry {self.address('redis-a')} {REDIS_PORT} 2\n"
                f"sentinel auth-pass registry {self.redis_password}\n"
                "sentinel down-after-milliseconds registry 2000\n"
                "sentinel failover-timeout registry 10000\n"
                "sentinel parallel-syncs registry 1\n"
            )
        host.spawn("sentinel", [redis_binary(), str(config), "--sentinel"])
        wait_for(
            lambda: self._redis_ping(host.address, SENTINEL_PORT, password=None),
            timeout=30,
            what=f"Sentinel on {host_name}",
        )

    def _redis_ping(self, address: str, port: int, password: str | None = "") -> bool:
        import redis

        client = redis.Redis(
            address,
            port,
            password=self.redis_password if password == "" else password,
            socket_timeout=1,
            socket_connect_timeout=1,
        )
        try:
            return bool(client.ping())
        finally:
            client.close()

    def redis_master(self) -> str:
        """The host Sentinel names as the master now."""
        import redis

        for host in SENTINEL_HOSTS:
            try:
                client = redis.Redis(self.address(host), SENTINEL_PORT, socket_timeout=1)
                address = client.sentinel_get_master_addr_by_name("registry")[0]
                client.close()
                address = address.decode() if isinstance(address, bytes) else address
            except redis.RedisError:
                continue
            return next(name for name, h in self.hosts.items() if h.address == address)
        raise AssertionError("no Sentinel answered")

    def _migrate(self) -> None:
        """The migrate role, as an operator runs it before the others. In a parallel test run the run's
        migrated template (tests/databases.py) is restored first, so the role finds nothing left to apply
        but still makes the administrator: migrating anew took 25 s of a core in the worker that builds the
        lab (migrating a fresh database is tested by tests/runtime/test_serve.py)."""
        self._restore_template()
        host = self.hosts["web-a"]
        host.run([sys.executable, "-m", "runtime.roles", "migrate"], env=self.env("web-a"), timeout=600)
        manage = [sys.executable, "manage.py"]
        created = host.run(
            [*manage, "create_service_account", "lab-robot", "--groups", "mcp-registry-admin"],
            env=self.env("web-a"),
        )
        fields = dict(line.split("=", 1) for line in created.split() if "=" in line)
        self.client_id, self.client_secret = fields["client_id"], fields["client_secret"]
        self.metrics_key = host.run(
            [*manage, "create_metrics_key", METRICS_SERVICE, "--rate-limit", "1000000"], env=self.env("web-a")
        ).strip()

    def _restore_template(self) -> None:
        host = self.hosts["db"]
        dump = host.directory / "template.sql"
        if not dumped_template(PG_BIN / "pg_dump", dump):
            return
        shutil.chown(dump, PG_USER)
        psql = [str(PG_BIN / "psql"), "-h", str(host.directory), "-U", "registry", "-d", "registry"]
        host.run([*psql, "-q", "-v", "ON_ERROR_STOP=1", "-f", str(dump)], user=PG_USER)

    def start_role(self, host: str, role: str) -> subprocess.Popen:
        return self.hosts[host].spawn(
            role,
            [sys.executable, "-m", "runtime.roles", role],
            env={**self.env(host), "PYTHONPATH": str(PROJECT_DIR)},
        )

    def wait_web(self, host: str) -> None:
        wait_for(
            lambda: self.get(f"{self.web_url(host)}/health").ok,
            timeout=START_TIMEOUT,
            what=f"the web role on {host}",
        )
        wait_for(
            lambda: self.get(f"{self.metrics_host_url(host)}/health").status_code < 500,
            timeout=START_TIMEOUT,
            what=f"the metrics role on {host}",
        )

    def wait_worker(self, host: str) -> None:
        wait_for(
            lambda: "ready." in self.hosts[host].log("worker"),
            timeout=START_TIMEOUT,
            what=f"the worker on {host}",
        )

    def start_balancer(self) -> None:
        host = self.hosts["lb"]
        nginx_dir = host.directory / "nginx"
        nginx_dir.mkdir(exist_ok=True)
        webs = "".join(
            f"    server {self.address(h)}:{WEB_PORT} max_fails=1 fail_timeout=5s;\n"
            for h in ("web-a", "web-b")
        )
        metrics = "".join(
            f"    server {self.address(h)}:{METRICS_PORT} max_fails=1 fail_timeout=5s;\n"
            for h in ("web-a", "web-b")
        )
        (nginx_dir / "nginx.conf").write_text(MAIN_CONFIG.format(directory=nginx_dir))
        (nginx_dir / "site.conf").write_text(
            BALANCER.format(
                webs=webs,
                metrics=metrics,
                address=host.address,
                port=LB_PORT,
                metrics_port=LB_METRICS_PORT,
            )
        )
        host.spawn(
            "nginx",
            [
                nginx_binary(),
                "-p",
                str(nginx_dir),
                "-e",
                str(nginx_dir / "error.log"),
                "-c",
                str(nginx_dir / "nginx.conf"),
            ],
        )

    def stop(self) -> None:
        self.lab.down()

    # -- clients -----------------------------------------------------------------------------------

    def get(self, url: str, **kwargs) -> requests.Response:
        return requests.get(url, timeout=kwargs.pop("timeout", 10), **kwargs)

    def token(self) -> str:
        """A bearer token of the lab's admin service account (a new one every ten minutes)."""
        if self._token is None or time.monotonic() - self._token[1] > 600:
            answer = requests.post(
                f"{self.url}/api/auth/token",
                data={
                    "grant_type": "client_credentials",
                    "client_id": self.client_id,
                    "client_secret": self.client_secret,
                },
                timeout=10,
            )
            answer.raise_for_status()
            self._token = (answer.json()["access_token"], time.monotonic())
        return self._token[0]

    def auth(self) -> dict:
        return {"Authorization": f"Bearer {self.token()}"}

    def basic(self) -> dict:
        raw = base64.b64encode(f"{ADMIN_USER}:{self.admin_password}".encode()).decode()
        return {"Authorization": f"Basic {raw}"}

    def register(self, path: str, *, base: str | None = None, name: str | None = None) -> dict:
        answer = requests.post(
            f"{base or self.url}/api/internal/register",
            json={
                "name": name or f"Lab {path}",
                "description": "Adds and echoes, on the lab's MCP host",
                "path": path,
                "proxy_pass_url": f"{self.mcp_url}/mcp",
            },
            headers=self.basic(),
            timeout=30,
        )
        assert answer.status_code == 201, answer.text
        return answer.json()["service"]

    def mcp_control(self, action: str, **query) -> dict:
        return requests.post(f"{self.mcp_url}/control/{action}", params=query, timeout=5).json()

    def mcp_calls(self) -> list[dict]:
        return requests.get(f"{self.mcp_url}/control/calls", timeout=5).json()["calls"]

    def sql(self, query: str) -> str:
        host = self.hosts["db"]
        return host.run(
            [
                str(PG_BIN / "psql"),
                "-h",
                str(host.directory),
                "-U",
                "postgres",
                "-d",
                "registry",
                "-At",
                "-c",
                query,
            ],
            user=PG_USER,
        ).strip()

    def kill_host(self, name: str) -> None:
        self.hosts[name].kill_all(signal.SIGKILL)


# The http-context part; tests/nginx.py's MAIN_CONFIG wraps it (its site.conf).
BALANCER = """\
map $http_upgrade $connection_upgrade {{ default upgrade; "" ""; }}
upstream registry {{
{webs}    keepalive 32;
}}
upstream metrics {{
{metrics}    keepalive 32;
}}
proxy_http_version 1.1;
proxy_connect_timeout 2s;
proxy_next_upstream error timeout;
server {{
    listen {address}:{port};
    client_max_body_size 2m;
    location / {{
        proxy_pass http://registry;
        proxy_set_header Host $http_host;
        proxy_set_header Upgrade $http_upgrade;
        proxy_set_header Connection $connection_upgrade;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_buffering off;
        proxy_read_timeout 1h;
    }}
}}
server {{
    listen {address}:{metrics_port};
    client_max_body_size 2m;
    location / {{
        proxy_pass http://metrics;
        proxy_set_header Host $http_host;
        proxy_set_header Connection "";
    }}
}}
"""
