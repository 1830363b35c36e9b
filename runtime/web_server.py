"""One web process: uvicorn serving an ASGI entry on a listening socket made here.

`python -m runtime.web_server APP HOST PORT` binds HOST:PORT with SO_REUSEPORT, so `manage.py
serve` runs WEB_CONCURRENCY such processes on one port and the kernel spreads connections over them
(websocket fan-out goes through the channel layer in Redis). The socket is made as a TCP socket
(IPPROTO_TCP) so that asyncio turns Nagle's algorithm off on every connection: uvicorn's own
multi-worker socket is not, and an answer's headers and body, written apart, then wait ~40 ms for the
client's delayed ACK.

uvicorn hands request bodies to the application as they arrive, so the request guard refuses an
oversized body before it is read.

`X-Forwarded-For` and `X-Forwarded-Proto` (the caller's address and scheme) are read only from the
addresses of TRUSTED_PROXIES (none by default): from anyone else they are ignored, so no client chooses
the scheme of the issuer or the address its rate limits count against."""

import os
import socket
import sys

import django
import uvicorn
from django.conf import settings
from django.urls import get_resolver


def listening_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(False)
    return sock


def proxy_options() -> dict:
    """uvicorn's options for the proxies it may believe (TRUSTED_PROXIES: addresses or networks)."""
    trusted = [address.strip() for address in settings.TRUSTED_PROXIES if address.strip()]
    return {"proxy_headers": bool(trusted), "forwarded_allow_ips": trusted or ""}


def main(application: str, host: str, port: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry_site.settings.base")
    django.setup()
    config = uvicorn.Config(
        application,
        **proxy_options(),
        lifespan="off",
        http="httptools",
        ws="websockets-sansio",
        server_header=False,
        timeout_graceful_shutdown=settings.WEB_SHUTDOWN_GRACE_SECONDS,
        access_log=False,
        log_level="warning",
    )
    config.load()  # import the application first: the port accepts connections only once it can answer,
    get_resolver().check()  # with every view and serializer imported, not on the first request
    uvicorn.Server(config).run(sockets=[listening_socket(host, int(port))])


if __name__ == "__main__":
    main(*sys.argv[1:4])
