"""Hosts on one machine: Linux network namespaces on one bridge, each with its own address, its own
loopback and its own processes. The bridge lives in a namespace of its own and the machine's namespace
joins it with one more veth (address .1), so the test drives the hosts over the same hops they use
among themselves; nothing reaches any other network. Needs root (`ip netns`), as CI runs.

    lab = Lab(directory, {"db": 10, "web-a": 11})
    lab.up()
    lab.hosts["db"].spawn("postgres", [...])
    lab.hosts["web-a"].kill_all()   # the host dies: every process in its namespace, SIGKILL
    lab.down()
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True, timeout=30)


def require_root_and_iproute() -> None:
    if shutil.which("ip") is None:
        pytest.fail("the multi-host tests need iproute2's `ip` (Debian package iproute2)")
    if os.geteuid() != 0:
        pytest.fail("the multi-host tests build hosts with `ip netns`, which needs root (CI runs as root)")


@dataclass
class Host:
    name: str
    namespace: str
    address: str
    directory: Path
    cwd: Path | None = None  # where its commands start (the project, for `manage.py` and `-m`)
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    _logs: list = field(default_factory=list)

    def command(self, argv: list[str], *, user: str | None = None) -> list[str]:
        prefix = ["ip", "netns", "exec", self.namespace]
        if user is not None:
            prefix += ["runuser", "-u", user, "--"]
        return prefix + argv

    def run(self, argv: list[str], *, env: dict | None = None, user: str | None = None, timeout=120):
        """Run a command on this host to its end; its output is returned, a failure raised with it."""
        done = subprocess.run(
            self.command(argv, user=user),
            env=env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise AssertionError(
                f"{self.name}: {' '.join(argv)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
            )
        return done.stdout

    def spawn(self, name: str, argv: list[str], *, env: dict | None = None, user: str | None = None):
        """Start a long-running process on this host, logging to `<directory>/<name>.log`."""
        log_path = self.directory / f"{name}.log"
        log = log_path.open("a")
        self._logs.append(log)
        process = subprocess.Popen(
            self.command(argv, user=user),
            env=env,
            cwd=self.cwd,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        process.log_path = log_path
        self.processes[name] = process
        return process

    def log(self, name: str) -> str:
        path = self.directory / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def pids(self) -> list[int]:
        found = _ip("netns", "pids", self.namespace, check=False).stdout.split()
        return [int(pid) for pid in found if pid.isdigit()]

    def kill_all(self, sig: int = signal.SIGKILL) -> None:
        """The host dies: every process in its namespace gets `sig` (SIGKILL unless told)."""
        for pid in self.pids():
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        for process in self.processes.values():
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                pass

    def stop(self, name: str, sig: int = signal.SIGTERM, timeout: float = 30) -> None:
        process = self.processes.get(name)
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, sig)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)

    def link(self, up: bool) -> None:
        """Cut or restore this host's only network link (its processes keep running)."""
        _ip("-n", self.namespace, "link", "set", "eth0", "up" if up else "down")


class Lab:
    def __init__(self, directory: Path, hosts: dict[str, int], *, cwd: Path | None = None):
        self.directory = directory
        self.tag = f"{os.getpid() % 100_000:05d}"
        self.subnet = f"10.231.{os.getpid() % 250 + 1}"
        self.lan = f"rl{self.tag}-lan"
        self.root_link = f"rl{self.tag}"
        self.gateway = f"{self.subnet}.1"
        self.hosts = {
            name: Host(name, f"rl{self.tag}-{name}", f"{self.subnet}.{octet}", directory / name, cwd)
            for name, octet in hosts.items()
        }

    def up(self) -> None:
        require_root_and_iproute()
        self.down()  # anything a killed earlier run of this pid left
        _ip("netns", "add", self.lan)
        _ip("-n", self.lan, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.lan, "link", "set", "br0", "up")
        _ip("-n", self.lan, "link", "set", "lo", "up")
        # the machine's own leg, so the test reaches the hosts
        _ip("link", "add", self.root_link, "type", "veth", "peer", "name", f"{self.root_link}p")
        self._plug(f"{self.root_link}p")
        _ip("addr", "add", f"{self.gateway}/24", "dev", self.root_link)
        _ip("link", "set", self.root_link, "up")
        for index, host in enumerate(self.hosts.values()):
            host.directory.mkdir(parents=True, exist_ok=True)
            host.directory.chmod(0o755)
            _ip("netns", "add", host.namespace)
            inside, outside = f"rl{self.tag}h{index}", f"rl{self.tag}b{index}"
            _ip("link", "add", inside, "type", "veth", "peer", "name", outside)
            _ip("link", "set", inside, "netns", host.namespace)
            _ip("-n", host.namespace, "link", "set", inside, "name", "eth0")
            _ip("-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", "eth0")
            _ip("-n", host.namespace, "link", "set", "eth0", "up")
            _ip("-n", host.namespace, "link", "set", "lo", "up")
            self._plug(outside)

    def _plug(self, link: str) -> None:
        _ip("link", "set", link, "netns", self.lan)
        _ip("-n", self.lan, "link", "set", link, "master", "br0")
        _ip("-n", self.lan, "link", "set", link, "up")

    def down(self) -> None:
        for host in self.hosts.values():
            if _ip("netns", "pids", host.namespace, check=False).returncode == 0:
                host.kill_all()
            for log in host._logs:
                log.close()
            host._logs.clear()
            _ip("netns", "del", host.namespace, check=False)
        _ip("netns", "del", self.lan, check=False)  # its end of every veth goes with it
        _ip("link", "del", self.root_link, check=False)
