"""Debian's nginx (`nginx-light`, installed by `make test`), run by a test as an unprivileged-path child:
its own prefix, pid file, logs and temporary directories under the test's directory, daemon off."""

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

START_TIMEOUT = 10.0
MAIN_CONFIG = """\
daemon off;
worker_processes 1;
pid {directory}/nginx.pid;
error_log {directory}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log {directory}/access.log;
    client_body_temp_path {directory}/client_body;
    proxy_temp_path {directory}/proxy;
    fastcgi_temp_path {directory}/fastcgi;
    uwsgi_temp_path {directory}/uwsgi;
    scgi_temp_path {directory}/scgi;
    include {directory}/site.conf;
}}
"""


def nginx_binary() -> str:
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
    if found is None:
        pytest.fail(
            "nginx is not installed. `make test` installs Debian's nginx-light when it runs as root "
            "(apt-get install nginx-light); install it and run the tests again."
        )
    return found


class Nginx:
    """nginx serving `site` (an http-context configuration) on a loopback port."""

    def __init__(self, directory: Path, site: str, port: int):
        self.directory, self.port = directory, port
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "site.conf").write_text(site)
        self.config = directory / "nginx.conf"
        self.config.write_text(MAIN_CONFIG.format(directory=directory))
        self.process: subprocess.Popen | None = None

    def command(self, *args: str) -> list[str]:
        return [
            nginx_binary(),
            "-p",
            str(self.directory),
            "-e",
            str(self.directory / "error.log"),
            "-c",
            str(self.config),
            *args,
        ]

    def start(self) -> "Nginx":
        checked = subprocess.run(self.command("-t", "-q"), capture_output=True, text=True)
        assert checked.returncode == 0, f"nginx refused the configuration:\n{checked.stderr}"
        self.process = subprocess.Popen(self.command(), stderr=subprocess.PIPE)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            assert self.process.poll() is None, f"nginx exited: {self.process.stderr.read().decode()}"
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                assert time.monotonic() < deadline, f"nginx did not listen on {self.port}"
                time.sleep(0.05)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def error_log(self) -> str:
        return (self.directory / "error.log").read_text()

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
