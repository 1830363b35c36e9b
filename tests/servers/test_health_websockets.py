"""The health websockets over the real ASGI application and the real Redis channel layer.

Each scenario runs in one event loop under `async_to_sync`, so the consumers' database reads run on the
test's thread and see its transaction."""

import asyncio
import time

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.db import transaction
from django.test import Client

from registry_site.asgi import application
from servers import services
from servers.choices import HealthStatus
from servers.health import CheckResult, check_and_record
from servers.live import stats
from servers.models import Server
from tests.factories import ServerFactory
from tests.mcp_servers import time_server_fixture  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

SESSION_PATH = "/api/health/ws/health_status"
PUBLIC_PATH = "/ws/health_status"
TIMEOUT = 5


def session_cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies[django_settings.SESSION_COOKIE_NAME].value


def socket(path: str, *, session: str | None = None, origin: str | None = None) -> WebsocketCommunicator:
    headers = []
    if session:
        headers.append((b"cookie", f"{django_settings.SESSION_COOKIE_NAME}={session}".encode()))
    if origin:
        headers.append((b"origin", origin.encode()))
    return WebsocketCommunicator(application, path, headers=headers)


async def opened(communicator: WebsocketCommunicator) -> dict:
    """Connect and return the snapshot."""
    connected, _ = await communicator.connect(timeout=TIMEOUT)
    assert connected
    return await communicator.receive_json_from(timeout=TIMEOUT)


async def closed_with(communicator: WebsocketCommunicator) -> int:
    connected, _ = await communicator.connect(timeout=TIMEOUT)
    assert connected
    message = await communicator.receive_output(timeout=TIMEOUT)
    assert message["type"] == "websocket.close"
    # The client answers the close as a browser does, so the consumer ends by its own path instead of being
    # cancelled with the test's event loop (a cancelled channel-layer receive once held that loop open).
    await communicator.disconnect(timeout=TIMEOUT)
    return message["code"]


def run(scenario) -> None:
    async_to_sync(scenario)()


def entry(status: str, num_tools: int = 0, checked=None, detail: str = "") -> dict:
    """A session's entry: with why a check failed and whether the server is enabled."""
    return {
        **public(status, num_tools, checked),
        "detail": detail,
        "enabled": status != "disabled",
    }


def public(status: str, num_tools: int = 0, checked=None) -> dict:
    """What anyone sees: status, check time and tool count only."""
    return {
        "status": status,
        "last_checked_iso": checked.isoformat() if checked else None,
        "num_tools": num_tools,
    }


@pytest.fixture
def servers(db):
    """One healthy, one unknown, one disabled server; weather is the only one the viewer sees."""
    return {
        "weather": ServerFactory(path="/weather", health_status="healthy", num_tools=4),
        "currenttime": ServerFactory(path="/currenttime", health_status="unknown"),
        "off": ServerFactory(path="/off", is_enabled=False, health_status="disabled"),
    }


def record(server: Server, status: str, tools: list | None = None) -> None:
    """Store a check result the way a worker does, publishing on commit."""
    with transaction.atomic():
        services.server_health_record(
            server=server, result=CheckResult(status=status, detail="d", tools=tools)
        )


def test_the_session_socket_without_a_session_is_closed_with_4401():
    async def scenario():
        assert await closed_with(socket(SESSION_PATH)) == 4401
        assert await closed_with(socket(SESSION_PATH, session="not-a-session")) == 4401

    run(scenario)


def test_an_admin_session_gets_a_snapshot_of_every_server_disabled_included(servers, admin_user):
    cookie = session_cookie(admin_user)

    async def scenario():
        communicator = socket(SESSION_PATH, session=cookie)
        assert await opened(communicator) == {
            "/currenttime": entry("unknown"),
            "/off": entry("disabled"),
            "/weather": entry("healthy", 4),
        }
        await communicator.disconnect()

    run(scenario)


def test_a_session_sees_only_the_servers_its_scopes_list(servers, viewer):
    cookie = session_cookie(viewer)

    async def scenario():
        communicator = socket(SESSION_PATH, session=cookie)
        assert await opened(communicator) == {"/weather": entry("healthy", 4)}
        await database_sync_to_async(record)(servers["currenttime"], "healthy", [])
        await database_sync_to_async(record)(servers["weather"], "unhealthy")
        change = await communicator.receive_json_from(timeout=TIMEOUT)
        assert list(change) == ["/weather"]
        assert change["/weather"]["status"] == "unhealthy"
        assert await communicator.receive_nothing(timeout=0.3)
        await communicator.disconnect()

    run(scenario)


def test_a_session_narrowed_to_some_tools_is_sent_only_their_count(servers, member, scope_factory):
    scope_factory(
        "weather-readers",
        group="readers",
        server_rules=[
            {"server": "/weather", "methods": ["tools/call"], "tools": ["get_forecast", "get_alerts"]}
        ],
    )
    cookie = session_cookie(member("rita", "readers"))
    tools = [
        {"name": name, "description": "", "input_schema": {}} for name in ("get_forecast", "get_uv", "ping")
    ]

    async def scenario():
        communicator = socket(SESSION_PATH, session=cookie)
        assert await opened(communicator) == {"/weather": entry("healthy", 0)}
        await database_sync_to_async(record)(servers["weather"], "healthy", tools)
        change = await communicator.receive_json_from(timeout=TIMEOUT)
        assert change["/weather"]["num_tools"] == 1  # get_forecast: the one of the three it may call
        await communicator.disconnect()

    run(scenario)


def test_the_public_socket_needs_nothing_and_shows_enabled_servers_only(servers):
    async def scenario():
        communicator = socket(PUBLIC_PATH)
        assert await opened(communicator) == {
            "/currenttime": public("unknown"),
            "/weather": public("healthy", 4),
        }
        await communicator.disconnect()

    run(scenario)


def test_ping_is_answered_with_pong_and_other_messages_with_an_error(servers):
    async def scenario():
        communicator = socket(PUBLIC_PATH)
        await opened(communicator)
        await communicator.send_json_to({"type": "ping"})
        assert await communicator.receive_json_from(timeout=TIMEOUT) == {"type": "pong"}
        await communicator.send_to(text_data="not json")
        assert await communicator.receive_json_from(timeout=TIMEOUT) == {
            "type": "error",
            "detail": 'The only message a client sends is {"type": "ping"}.',
        }
        await communicator.send_json_to({"type": "ping"})
        assert await communicator.receive_json_from(timeout=TIMEOUT) == {"type": "pong"}
        await communicator.disconnect()

    run(scenario)


def test_every_real_check_reaches_both_sockets_with_its_time(time_server, admin_user):
    server = ServerFactory(path="/clock", proxy_pass_url=time_server, health_status="unknown")
    cookie = session_cookie(admin_user)

    async def scenario():
        private, anyone = socket(SESSION_PATH, session=cookie), socket(PUBLIC_PATH)
        assert await opened(private) == {"/clock": entry("unknown")}
        assert await opened(anyone) == {"/clock": public("unknown")}

        await database_sync_to_async(check_and_record)(server.pk)

        stored = await database_sync_to_async(Server.objects.get)(pk=server.pk)
        assert await private.receive_json_from(timeout=TIMEOUT) == {
            "/clock": entry("healthy", 3, stored.last_checked_at, "3 tools listed")
        }
        assert await anyone.receive_json_from(timeout=TIMEOUT) == {
            "/clock": public("healthy", 3, stored.last_checked_at)
        }

        await database_sync_to_async(check_and_record)(server.pk)  # same status, same tools, a new time
        again = await database_sync_to_async(Server.objects.get)(pk=server.pk)
        assert again.last_checked_at > stored.last_checked_at
        assert await private.receive_json_from(timeout=TIMEOUT) == {
            "/clock": entry("healthy", 3, again.last_checked_at, "3 tools listed")
        }
        assert await anyone.receive_json_from(timeout=TIMEOUT) == {
            "/clock": public("healthy", 3, again.last_checked_at)
        }
        await private.disconnect()
        await anyone.disconnect()

    run(scenario)


def test_disabling_shows_disabled_to_sessions_and_drops_the_server_from_the_public_view(servers, admin_user):
    cookie = session_cookie(admin_user)

    def disable():
        services.server_toggle(actor=admin_user, server=Server.objects.get(path="/weather"), enabled=False)

    async def scenario():
        private, public = socket(SESSION_PATH, session=cookie), socket(PUBLIC_PATH)
        await opened(private)
        await opened(public)
        await database_sync_to_async(disable)()
        assert await private.receive_json_from(timeout=TIMEOUT) == {"/weather": entry("disabled", 4)}
        assert await public.receive_json_from(timeout=TIMEOUT) == {"/weather": None}
        await private.disconnect()
        await public.disconnect()

    run(scenario)


def test_a_new_server_and_a_deleted_one_are_sent(servers, admin_user):
    cookie = session_cookie(admin_user)

    def create():
        services.server_create(
            actor=admin_user,
            path="/fresh",
            name="Fresh",
            proxy_pass_url="http://127.0.0.1:9/mcp",
            is_enabled=True,
        )

    def delete():
        services.server_delete(actor=admin_user, server=Server.objects.get(path="/currenttime"))

    async def scenario():
        private = socket(SESSION_PATH, session=cookie)
        await opened(private)
        await database_sync_to_async(create)()
        assert await private.receive_json_from(timeout=TIMEOUT) == {"/fresh": entry("unknown")}
        await database_sync_to_async(delete)()
        assert await private.receive_json_from(timeout=TIMEOUT) == {"/currenttime": None}
        await private.disconnect()

    run(scenario)


def test_a_rolled_back_change_is_not_sent(servers):
    def change_then_roll_back():
        with pytest.raises(RuntimeError), transaction.atomic():
            record(Server.objects.get(path="/weather"), HealthStatus.UNHEALTHY)
            raise RuntimeError("the writer failed after the check")

    async def scenario():
        public = socket(PUBLIC_PATH)
        await opened(public)
        await database_sync_to_async(change_then_roll_back)()
        assert await public.receive_nothing(timeout=0.5)
        await public.disconnect()

    run(scenario)


def test_keep_alives_come_and_a_logout_ends_the_socket(servers, viewer, settings):
    settings.HEALTH_WS_KEEPALIVE_SECONDS = 0.2
    client = Client()
    client.force_login(viewer)
    cookie = client.cookies[django_settings.SESSION_COOKIE_NAME].value

    async def scenario():
        communicator = socket(SESSION_PATH, session=cookie)
        await opened(communicator)
        assert await communicator.receive_json_from(timeout=TIMEOUT) == {"type": "keepalive"}
        await database_sync_to_async(client.logout)()
        message = await communicator.receive_output(timeout=TIMEOUT)
        while message["type"] == "websocket.send":  # a keep-alive already on its way
            message = await communicator.receive_output(timeout=TIMEOUT)
        assert message == {"type": "websocket.close", "code": 4401}

    run(scenario)


def test_a_foreign_origin_is_refused_on_the_session_socket_only(servers, admin_user):
    cookie = session_cookie(admin_user)

    async def scenario():
        foreign = socket(SESSION_PATH, session=cookie, origin="https://evil.example")
        connected, _ = await foreign.connect(timeout=TIMEOUT)
        assert not connected
        own = socket(SESSION_PATH, session=cookie, origin="http://localhost:8000")
        assert "/weather" in await opened(own)
        public = socket(PUBLIC_PATH, origin="https://elsewhere.example")
        assert "/weather" in await opened(public)
        await own.disconnect()
        await public.disconnect()

    run(scenario)


def test_an_unknown_websocket_path_is_closed_with_4404():
    async def scenario():
        assert await closed_with(socket("/ws/nothing-here")) == 4404

    run(scenario)


def test_the_consumer_of_an_unknown_path_ends_with_its_close():
    """No task of it is left behind (a Redis receive waiting for a disconnect that a client who goes away
    at once never sends), so nothing is left to cancel when the socket's loop ends."""

    async def scenario():
        communicator = socket("/ws/nothing-here")
        await communicator.connect(timeout=TIMEOUT)
        await communicator.receive_output(timeout=TIMEOUT)
        await communicator.wait(timeout=1)  # the application has returned
        return communicator.future.done() and communicator.future.exception() is None

    assert async_to_sync(scenario)() is True


def test_stats_count_connections_and_messages_across_processes(servers, client):
    stats.heartbeat()

    async def scenario():
        first, second = socket(PUBLIC_PATH), socket(PUBLIC_PATH)
        await opened(first)
        await opened(second)
        await first.send_json_to({"type": "ping"})
        await first.receive_json_from(timeout=TIMEOUT)
        counted = await database_sync_to_async(client.get)("/api/health/ws/stats")
        await first.disconnect()
        after = await database_sync_to_async(client.get)("/api/health/ws/stats")
        await second.disconnect()
        return counted, after

    counted, after = async_to_sync(scenario)()

    assert counted.status_code == 200
    assert counted.json()["active_connections"] == 2
    assert counted.json()["total_messages_sent"] == 3  # two snapshots and a pong
    assert 0 <= counted.json()["uptime_seconds"] <= 5
    assert after.json()["active_connections"] == 1


def test_connections_of_a_process_that_died_stop_counting(client, settings):
    settings.HEALTH_WS_KEEPALIVE_SECONDS = 10
    sync = stats.sync_client()
    sync.zadd(stats.CONNECTIONS, {"alive": time.time() + 30, "died": time.time() - 1})
    sync.set(stats.STARTED, f"{time.time() - 120:.3f}")

    body = client.get("/api/health/ws/stats").json()

    assert body["active_connections"] == 1
    assert 119 <= body["uptime_seconds"] <= 125


def test_a_keep_alive_landing_after_the_close_does_not_count_the_socket_again(client):
    async def close_then_late_renewal():
        await stats.connection_opened("gone")
        await stats.connection_closed("gone")
        await stats.connection_seen("gone")  # its thread ran on after the consumer cancelled it

    async_to_sync(close_then_late_renewal)()

    assert client.get("/api/health/ws/stats").json()["active_connections"] == 0


def test_uptime_starts_again_once_every_web_process_is_gone(client, settings):
    settings.HEALTH_WS_KEEPALIVE_SECONDS = 10
    stats.heartbeat()
    assert 0 < stats.sync_client().ttl(stats.STARTED) <= 30

    stats.sync_client().delete(stats.STARTED)  # the mark expired: no process renewed it

    assert client.get("/api/health/ws/stats").json()["uptime_seconds"] == 0


def test_the_http_snapshot_is_public_without_a_session_scoped_with_one(servers, client, viewer, admin_user):
    anonymous = client.get("/api/health/ws/health_status")
    client.force_login(viewer)
    scoped = client.get("/api/health/ws/health_status")
    client.force_login(admin_user)
    everything = client.get("/api/health/ws/health_status")

    assert anonymous.status_code == 200
    assert anonymous.json() == {"/currenttime": public("unknown"), "/weather": public("healthy", 4)}
    assert scoped.json() == {"/weather": entry("healthy", 4)}
    assert list(everything.json()) == ["/currenttime", "/off", "/weather"]


def test_the_status_page_lists_enabled_servers_for_anyone_and_listens_to_the_public_socket(servers, client):
    response = client.get("/status")

    page = response.content.decode()
    assert response.status_code == 200
    assert 'data-health-socket="/ws/health_status"' in page
    assert '<tr data-path="/weather">' in page and '<tr data-path="/currenttime">' in page
    assert "/off" not in page
    assert '<span class="badge status-healthy" data-health-status="healthy">Healthy</span>' in page
    assert '<script src="/static/js/health-live.js" defer></script>' in page


def test_a_client_gone_under_a_send_ends_the_socket_quietly(settings, caplog):
    """uvicorn raises ClientDisconnected when a consumer sends on a socket its client closed (a keepalive or
    a change racing the disconnect): an ordinary end, logged at no level above debug, never a traceback."""
    from uvicorn.protocols.utils import ClientDisconnected

    from servers.consumers import PublicHealthStatusConsumer

    settings.HEALTH_WS_KEEPALIVE_SECONDS = 0.01
    sent = []

    async def gone(message):
        sent.append(message)
        raise ClientDisconnected()

    consumer = PublicHealthStatusConsumer()
    consumer.scope, consumer.channel_name, consumer.base_send = {"type": "websocket"}, "test!gone", gone
    consumer.channel_layer = get_channel_layer()

    async def run():
        await asyncio.wait_for(consumer.keep_alive(), timeout=5)  # ends at the first send that fails
        await consumer.health_changed({"path": "/x", "enabled": False, "entry": None})

    with caplog.at_level("WARNING"):
        async_to_sync(run)()

    assert [message["type"] for message in sent] == ["websocket.send", "websocket.send"]
    assert caplog.records == []
