"""Limits at the door, against real web processes as `make run` starts them: oversized bodies are
refused with 413 before they are read (by Content-Length, and by counting a body sent without one), a
burst of websocket handshakes is served (or refused with 1013), never answered with a 500, with
statistics that stay true; a websocket to the metrics service is closed with 4404; X-Forwarded-* are
believed only from TRUSTED_PROXIES."""

import asyncio
import json
import select
import socket
import time

import pytest
import requests
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.processes import ProcessGroup, free_ports, wait_healthy

pytestmark = [pytest.mark.stack, pytest.mark.django_db(transaction=True)]

LIMIT = 1024 * 1024


@pytest.fixture(scope="module")
def ports(tmp_path_factory, django_db_setup, django_db_blocker):
    """A registry web process (with a deliberately small Redis pool), one behind a trusted proxy on
    loopback, and a metrics service process."""
    web_port, metrics_port, trusting_port = free_ports(3)
    group = ProcessGroup(tmp_path_factory.mktemp("limits"))
    with django_db_blocker.unblock():
        try:
            web = group.web(
                "web", web_port, "registry_site.asgi:application", env={"REDIS_POOL_MAX_CONNECTIONS": "20"}
            )
            metrics = group.web("metrics", metrics_port, "registry_site.metrics_asgi:application")
            trusting = group.web(
                "trusting",
                trusting_port,
                "registry_site.asgi:application",
                env={"TRUSTED_PROXIES": "127.0.0.1"},
            )
            wait_healthy(web_port, web)
            wait_healthy(metrics_port, metrics)
            wait_healthy(trusting_port, trusting)
            yield {"registry": web_port, "metrics": metrics_port, "trusting": trusting_port}
        finally:
            group.stop()


def status_of(response: bytes) -> int:
    return int(response.split(b" ", 2)[1])


def test_a_declared_oversized_body_is_413_before_any_of_it_is_sent(ports):
    for service, path in (("registry", "/api/agents/register"), ("metrics", "/metrics")):
        with socket.create_connection(("127.0.0.1", ports[service]), timeout=10) as sock:
            sock.sendall(
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                f"Content-Length: {1024**3}\r\n\r\n".encode()
            )
            answer = b""
            while chunk := sock.recv(65536):  # the guard closes the connection after its answer
                answer += chunk
        assert status_of(answer) == 413, (service, answer)
        assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error_code"] == "payload_too_large"


def test_a_chunked_body_is_refused_once_it_passes_the_limit(ports):
    chunk = b"x" * 65536
    framed = b"%x\r\n%s\r\n" % (len(chunk), chunk)
    with socket.create_connection(("127.0.0.1", ports["registry"]), timeout=10) as sock:
        sock.sendall(
            b"POST /api/agents/register HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        sock.setblocking(False)
        sent, answer, deadline = 0, b"", time.monotonic() + 30
        while not answer and sent < 256 * LIMIT and time.monotonic() < deadline:
            readable, writable, _ = select.select([sock], [sock], [], 1)
            if readable:
                answer = sock.recv(65536)
            elif writable:
                try:
                    sent += sock.send(framed)
                except BlockingIOError:
                    pass
                except ConnectionResetError:  # it answered and closed while this was still sending:
                    break  # the answer waits in the receive queue, read below as any HTTP client does
        if not answer:
            sock.settimeout(10)
            answer = sock.recv(65536)

    assert status_of(answer) == 413
    assert sent < 8 * LIMIT  # what the kernel's buffers hold, far from the 256 MiB this would have sent


def test_a_burst_of_websocket_handshakes_is_served_and_counted_truly(ports):
    port = ports["registry"]
    count = 300

    async def one():
        try:
            socket_ = await connect(f"ws://127.0.0.1:{port}/ws/health_status", open_timeout=60)
        except InvalidStatus as refused:
            return ("http", refused.response.status_code, None)
        try:
            message = json.loads(await asyncio.wait_for(socket_.recv(), 60))
            return ("open", isinstance(message, dict), socket_)
        except ConnectionClosed as closed:
            return ("closed", closed.rcvd.code if closed.rcvd else None, None)

    async def scenario():
        results = await asyncio.gather(*(one() for _ in range(count)))
        open_sockets = [r[2] for r in results if r[0] == "open"]
        during = requests.get(f"http://127.0.0.1:{port}/api/health/ws/stats", timeout=10).json()
        await asyncio.gather(*(s.close() for s in open_sockets))
        deadline = time.monotonic() + 30  # 300 closes counted through a few threads on a busy machine
        after = during
        while time.monotonic() < deadline:
            after = requests.get(f"http://127.0.0.1:{port}/api/health/ws/stats", timeout=10).json()
            if after["active_connections"] == 0:
                break
            await asyncio.sleep(0.2)
        return results, len(open_sockets), during, after

    results, opened, during, after = asyncio.run(scenario())

    kinds = {(kind, detail) for kind, detail, _ in results}
    assert kinds <= {("open", True), ("closed", 1013)}, kinds
    assert opened >= 1
    assert during["active_connections"] == opened
    assert after["active_connections"] == 0


def test_a_websocket_to_the_metrics_service_is_closed_with_4404(ports):
    async def attempt():
        async with connect(f"ws://127.0.0.1:{ports['metrics']}/metrics", open_timeout=10) as socket_:
            try:
                await asyncio.wait_for(socket_.recv(), 10)
            except ConnectionClosed as closed:
                return closed.rcvd.code if closed.rcvd else None
        return None

    assert asyncio.run(attempt()) == 4404
    assert requests.get(f"http://127.0.0.1:{ports['metrics']}/health", timeout=10).status_code == 200


FORWARDED = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"}


def test_forwarded_headers_are_believed_only_from_trusted_proxies(ports):
    untrusted = requests.get(
        f"http://127.0.0.1:{ports['registry']}/.well-known/oauth-authorization-server", headers=FORWARDED
    )
    trusted = requests.get(
        f"http://127.0.0.1:{ports['trusting']}/.well-known/oauth-authorization-server", headers=FORWARDED
    )

    assert untrusted.json()["issuer"] == f"http://127.0.0.1:{ports['registry']}"
    assert trusted.json()["issuer"] == f"https://127.0.0.1:{ports['trusting']}"
