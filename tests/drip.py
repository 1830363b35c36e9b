"""A party that answers at its own slow pace, on loopback: each connection gets its headers (or, with
`headers_too`, its header bytes too) one byte every `interval` seconds, until the client goes away or
`for_seconds` have passed. Optionally over TLS with a certificate from tests/oauth/flow.py."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from pathlib import Path

from tests.mcp_servers import loopback_socket

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"


class DripServer:
    def __init__(
        self,
        *,
        interval: float = 0.2,
        for_seconds: float = 30.0,
        headers_too: bool = False,
        certificate: tuple[Path, Path] | None = None,
    ):
        self.interval, self.for_seconds, self.headers_too = interval, for_seconds, headers_too
        self.sock = loopback_socket()
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.context = None
        if certificate is not None:
            self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.context.load_cert_chain(*certificate)
        self.connections = 0
        self.stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, path: str = "/") -> str:
        scheme = "https" if self.context else "http"
        host = "localhost" if self.context else "127.0.0.1"
        return f"{scheme}://{host}:{self.port}{path}"

    def _accept(self):
        while not self.stopped.is_set():
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._drip, args=(client,), daemon=True).start()

    def _drip(self, client: socket.socket):
        ends = time.monotonic() + self.for_seconds
        try:
            if self.context is not None:
                client.settimeout(5)
                client = self.context.wrap_socket(client, server_side=True)
            client.settimeout(5)
            client.recv(65536)  # the request
            if not self.headers_too:
                client.sendall(HEAD)
            payload = (HEAD if self.headers_too else b"") + b" " * 1_000_000
            for byte in payload:
                if self.stopped.is_set() or time.monotonic() > ends:
                    break
                client.sendall(bytes([byte]))
                time.sleep(self.interval)
        except OSError:
            pass
        finally:
            client.close()

    def stop(self):
        self.stopped.set()
        self.sock.close()
