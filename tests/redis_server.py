"""A Redis server of one test's own (the embedded server's binary, on a loopback port), which the test may
kill and start again on the same port."""

from __future__ import annotations

import subprocess

import redis

from tests.conftest import unused_port
from tests.waiting import wait_for


class RedisServer:
    def __init__(self, directory, password: str = "") -> None:
        self.directory = directory
        self.password = password
        self.port = unused_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        from runtime.embedded import _redis_binary

        command = [str(_redis_binary()), "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        command += ["--appendonly", "no", "--dir", str(self.directory)]
        if self.password:
            command += ["--requirepass", self.password]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis.from_url(self.url, socket_connect_timeout=0.5)
        wait_for(lambda: _answers(client), timeout=10, what=f"redis-server on port {self.port}")
        client.close()
        return self

    def kill(self) -> None:
        """Stopped at once (SIGKILL): its clients' connections are reset, new ones refused."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None


def _answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
