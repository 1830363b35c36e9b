"""The one rule for HTTP the registry fetches from a party it does not run: a client's metadata document,
another registry's pages, and whatever later fetches are added.

- A total deadline: connecting, the headers and the whole body together. Socket timeouts bound each read
  only, so a party that sends a byte a second would hold the caller for ever; here a watchdog cuts the
  connection when the deadline passes, whatever the party's pace.
- A size bound: the body is read up to `max_bytes` and refused beyond.
- No redirects, no retries, no proxies from the environment.

Fetches made while a caller waits are also capped per process, below the threads of a web process
(OUTBOUND_FETCHES_PER_PROCESS, taken without waiting: beyond it a caller is refused at once), so they
can never hold every thread that serves other callers: for client metadata documents that cap is
django-oauth-toolkit's in-flight cap, set from the same setting (registry_site/settings/oauth.py).
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from http.client import HTTPException
from urllib.parse import urlsplit

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection

CHUNK_BYTES = 64 * 1024


class FetchFailed(Exception):
    """The fetch did not give a whole answer in time and within its size; `str()` says why."""


@dataclass(frozen=True)
class Fetched:
    status: int
    headers: Mapping[str, str]
    body: bytes

    @property
    def media_type(self) -> str:
        return self.headers.get("Content-Type", "").split(";")[0].strip().lower()


def _cut(connection: HTTPConnection, held: dict) -> None:
    """Shut the connection's socket down under a read blocked on it (from the watchdog's thread)."""
    sock = connection.sock or held.get("sock")
    if sock is not None:
        with contextlib.suppress(OSError):
            socket.socket.shutdown(sock, socket.SHUT_RDWR)  # the plain socket's, under any TLS layer


def fetch(
    url: str,
    *,
    deadline_seconds: float,
    max_bytes: int,
    headers: Mapping[str, str] | None = None,
    connect_to: str | None = None,
    ssl_context: ssl.SSLContext | None = None,
    method: str = "GET",
    body: bytes | None = None,
) -> Fetched:
    """GET `url` (or `method` with `body`) within `deadline_seconds` in all, its answer's body at most
    `max_bytes`; FetchFailed otherwise.

    `connect_to` connects to that address instead of resolving the URL's host (an address checked
    beforehand), while TLS and the Host header still name the host."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FetchFailed(f"not an http(s) URL: {url[:200]}")
    https = parts.scheme == "https"
    port = parts.port or (443 if https else 80)
    address = connect_to or parts.hostname
    if https:
        connection: HTTPConnection = HTTPSConnection(
            address,
            port,
            timeout=deadline_seconds,
            ssl_context=ssl_context or ssl.create_default_context(),
            server_hostname=parts.hostname,
        )
    else:
        connection = HTTPConnection(address, port, timeout=deadline_seconds)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    sent = {"Host": parts.netloc.rpartition("@")[2], "Accept-Encoding": "identity", **(headers or {})}
    deadline = time.monotonic() + deadline_seconds
    held: dict = {}  # the socket, which the connection hands to its response with a closing answer
    watchdog = threading.Timer(deadline_seconds, _cut, [connection, held])
    watchdog.daemon = True
    watchdog.start()
    try:
        connection.request(method, path, body=body, headers=sent, preload_content=False)
        held["sock"] = connection.sock
        response = connection.getresponse()
        answer = bytearray()
        while len(answer) <= max_bytes:
            if time.monotonic() >= deadline:
                raise TimeoutError
            chunk = response.read(min(CHUNK_BYTES, max_bytes + 1 - len(answer)))
            if not chunk:
                break
            answer += chunk
        if time.monotonic() >= deadline:  # the watchdog's cut reads as an early end
            raise TimeoutError
    except (OSError, HTTPException, urllib3.exceptions.HTTPError) as exc:
        if time.monotonic() >= deadline or isinstance(exc, TimeoutError):
            raise FetchFailed(f"no whole answer within {deadline_seconds:g} s") from None
        raise FetchFailed(f"{type(exc).__name__}: {exc}"[:500]) from None
    finally:
        watchdog.cancel()
        connection.close()
        if held.get("sock") is not None:
            held["sock"].close()
    if len(answer) > max_bytes:
        raise FetchFailed(f"the answer is larger than {max_bytes} bytes")
    return Fetched(response.status, response.headers, bytes(answer))


class AddressRefused(Exception):
    """A host the registry will not connect to on a party's word; `str()` says why."""


def addresses_to_reach(
    hostname: str, port: int, *, allowed_hosts=(), allow_loopback: bool = False
) -> list[str]:
    """The addresses of `hostname` the registry may connect to when a party it does not run names it: every
    address public, or the host on the operator's `allowed_hosts` list, or (with `allow_loopback`, for
    development) every address a loopback one. Connect to these, not to the name again, so DNS cannot
    rebind it between the check and the connection."""
    try:
        infos = socket.getaddrinfo(hostname, port, proto=socket.IPPROTO_TCP)
    except socket.gaierror:
        raise AddressRefused(f"{hostname} does not resolve") from None
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    if hostname.lower() in {host.lower() for host in allowed_hosts}:
        return addresses
    parsed = [ipaddress.ip_address(address.split("%")[0]) for address in addresses]
    if allow_loopback and all(address.is_loopback for address in parsed):
        return addresses
    if not all(address.is_global for address in parsed):
        raise AddressRefused(
            f"{hostname} resolves to an address that is not public and is not on the allowed list"
        )
    return addresses
