"""Runs the whole system as one supervised group: web (uvicorn), Celery worker and Celery beat.

Each child gets its own session, the same DATABASE_URL, REDIS_URL and SECRET_KEY, and a parent-death
signal, so Ctrl-C (or SIGTERM) stops every process and a killed supervisor leaves no orphans. If one
child dies, the others are stopped too: a half-running registry is worse than a stopped one.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field

STOP_TIMEOUT_SECONDS = 15
READY_TIMEOUT_SECONDS = 120

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child, before exec: get SIGTERM when the supervisor dies, whatever killed it."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass  # not Linux: Ctrl-C and SIGTERM still stop the group


@dataclass
class Child:
    name: str
    argv: list[str]
    process: subprocess.Popen | None = None
    pump: threading.Thread | None = field(default=None, repr=False)


class Supervisor:
    """Starts children, prefixes their output, and stops them all together."""

    def __init__(self, children: list[Child], env: dict[str, str], write: Callable[[str], None]):
        self.children = children
        self.env = env
        self.write = write
        self._stopping = threading.Event()
        self._write_lock = threading.Lock()
        width = max(len(child.name) for child in children)
        self._prefix = {child.name: f"{child.name.ljust(width)} | " for child in children}

    def start(self) -> None:
        for child in self.children:
            child.process = subprocess.Popen(
                child.argv,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
            child.pump = threading.Thread(target=self._pump, args=(child,), daemon=True)
            child.pump.start()
            self._line(f"supervisor | started {child.name} (pid {child.process.pid})")

    def _pump(self, child: Child) -> None:
        assert child.process is not None and child.process.stdout is not None
        for raw in child.process.stdout:
            self._line(self._prefix[child.name] + raw.decode(errors="replace").rstrip())

    def _line(self, text: str) -> None:
        with self._write_lock:
            self.write(text)

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def first_exit(self) -> Child | None:
        """The first child that has exited, if any."""
        return next((c for c in self.children if c.process and c.process.poll() is not None), None)

    def wait(self) -> int:
        """Block until a signal or a child's death; return the exit code for the supervisor."""
        while not self._stopping.is_set():
            dead = self.first_exit()
            if dead is not None:
                self._line(
                    f"supervisor | {dead.name} exited with code {dead.process.returncode}; stopping the rest"
                )
                return 1
            self._stopping.wait(0.5)
        return 0

    def request_stop(self, signum, frame) -> None:
        self._stopping.set()

    def stop(self) -> None:
        """SIGTERM every child's process group, then SIGKILL whatever is left after the timeout."""
        self._stopping.set()
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the clean-up short
        for child in self.children:
            self._signal_group(child, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
        for child in self.children:
            if child.process is None:
                continue
            try:
                child.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self._line(f"supervisor | {child.name} did not stop in time; killing it")
        for child in self.children:
            self._signal_group(child, signal.SIGKILL)  # also reaps pool processes left in the group
            if child.process is not None:
                child.process.wait()
            if child.pump is not None:
                child.pump.join(timeout=2)

    @staticmethod
    def _signal_group(child: Child, signum: int) -> None:
        if child.process is None:
            return
        try:
            os.killpg(child.process.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def wait_until_healthy(url: str, supervisor: Supervisor, timeout: float = READY_TIMEOUT_SECONDS) -> bool:
    """Poll the health URL until it answers 200, a child dies, or the timeout passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and supervisor.first_exit() is None and not supervisor.stopping:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 (loopback URL we built)
                if response.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.25)
    return False


def install_signal_handlers(supervisor: Supervisor) -> None:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, supervisor.request_stop)


def python_module(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


def asgi_server(application: str, host: str, port: int) -> list[str]:
    """The command of one web process serving an ASGI entry (HTTP and websockets) on host:port; several
    may share the port (runtime/web_server.py)."""
    return python_module("runtime.web_server", application, host, str(port))


def asgi_servers(name: str, count: int, application: str, host: str, port: int) -> list[Child]:
    """`count` (at least one) web processes of `application` sharing host:port, named `name` when there is
    one, `name1`…`nameN` otherwise."""
    count = max(1, count)
    return [
        Child(name if count == 1 else f"{name}{n}", asgi_server(application, host, port))
        for n in range(1, count + 1)
    ]
