"""A check run by a Celery worker reaches websocket clients of two separate uvicorn processes through the
channels-redis layer, and the websocket statistics add up across both processes.

Real processes on the test database and Redis: two uvicorn web servers, one Celery worker, a real MCP
server on loopback, and clients speaking the websocket protocol over TCP."""

import asyncio
import json

import pytest
import requests
from asgiref.sync import async_to_sync
from django.conf import settings
from django.test import Client
from websockets.asyncio.client import connect

from servers.models import Server
from servers.tasks import check_server_task
from tests.factories import ServerFactory
from tests.mcp_servers import time_server_fixture  # noqa: F401
from tests.processes import ProcessGroup, free_ports, wait_healthy, wait_worker_ready
from tests.waiting import wait_for

pytestmark = [pytest.mark.stack, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def group(tmp_path):
    """Two uvicorn processes and one Celery worker; yields the two web ports."""
    ports = free_ports(2)
    group = ProcessGroup(tmp_path)
    try:
        webs = [group.web(f"web{n}", port, "registry_site.asgi:application") for n, port in enumerate(ports)]
        worker = group.start(
            "worker", "celery", "-A", "registry_site", "worker", "--pool", "solo", "--loglevel", "INFO"
        )
        for port, web in zip(ports, webs, strict=True):
            wait_healthy(port, web)
        wait_worker_ready(worker.log_path, worker)
        yield ports
    finally:
        group.stop()


async def next_message(socket, timeout: float = 60) -> dict:
    """The next message that is not a keep-alive; TimeoutError when none comes in `timeout` seconds (the
    worker's check failed), so the test fails with its reason rather than waiting for its time limit."""
    async with asyncio.timeout(timeout):
        while True:
            message = json.loads(await socket.recv())
            if message.get("type") != "keepalive":
                return message


def test_a_workers_check_reaches_clients_of_both_web_processes(group, time_server, admin_user):
    first, second = group
    server = ServerFactory(path="/clock", proxy_pass_url=time_server, health_status="unknown")
    client = Client()
    client.force_login(admin_user)
    cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"

    async def scenario():
        private_url = f"ws://127.0.0.1:{first}/api/health/ws/health_status"
        public_url = f"ws://127.0.0.1:{second}/ws/health_status"
        async with (
            connect(private_url, additional_headers={"Cookie": cookie}, open_timeout=10) as private,
            connect(public_url, open_timeout=10) as public,
            connect(f"ws://127.0.0.1:{second}/api/health/ws/health_status", open_timeout=10) as refused,
        ):
            await refused.wait_closed()
            snapshots = [json.loads(await private.recv()), json.loads(await public.recv())]
            # each process counts a message once it has sent it: the sum reaches 2 a moment after
            stats = wait_for(
                lambda: _stats_counting(second, 2), timeout=5, interval=0.05, what="both snapshots counted"
            )

            await asyncio.sleep(6)  # idle past the channel layer's 5 s blocking pop: still subscribed
            check_server_task.delay(server.pk)  # runs on the worker process

            changes = [await next_message(private), await next_message(public)]
            return refused.close_code, snapshots, stats, changes

    refused_code, snapshots, stats, changes = async_to_sync(scenario)()

    checked = Server.objects.get(pk=server.pk).last_checked_at.isoformat()
    seen = {"status": "healthy", "last_checked_iso": checked, "num_tools": 3}  # what anyone may see
    unknown = {"status": "unknown", "last_checked_iso": None, "num_tools": 0}
    assert refused_code == 4401  # the session socket without a session
    assert snapshots == [
        {"/clock": {**unknown, "detail": "", "enabled": True}},
        {"/clock": unknown},
    ]
    assert stats["active_connections"] == 2  # one on each process; the refused one has left
    assert stats["total_messages_sent"] == 2
    assert changes == [
        {"/clock": {**seen, "detail": "3 tools listed", "enabled": True}},
        {"/clock": seen},
    ]


def _stats_counting(port: int, sent: int) -> dict | None:
    """The websocket statistics once they count `sent` messages, else None."""
    stats = requests.get(f"http://127.0.0.1:{port}/api/health/ws/stats", timeout=5).json()
    return stats if stats["total_messages_sent"] >= sent else None
