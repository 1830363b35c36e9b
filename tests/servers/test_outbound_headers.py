"""A server's outbound headers are credentials for one origin: moving the server to another origin
drops them (audited) unless the same change sets headers, so an editor can never redirect them to an
address of theirs; a real loopback server proves nothing of them arrives there."""

import pytest
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

from accounts.models import AuditEvent
from servers.health import check_server
from servers.models import Server
from servers.services import server_update
from tests.factories import ServerFactory
from tests.mcp_servers import UvicornThread, loopback_socket

pytestmark = pytest.mark.django_db

SECRET = {"X-Api-Key": "s3cret-for-the-real-server"}


@pytest.fixture
def listener():
    """An HTTP server recording the headers of every request it gets."""
    seen: list[dict] = []

    async def record(request):
        seen.append(dict(request.headers))
        return Response("not an MCP server", status_code=404)

    app = Starlette(routes=[Route("/{rest:path}", record, methods=["GET", "POST", "DELETE"])])
    thread = UvicornThread(app, loopback_socket()).start()
    yield thread, seen
    thread.stop()


def test_an_editor_moving_a_server_elsewhere_never_sends_its_headers_there(client, operator, listener):
    thread, seen = listener
    ServerFactory(path="/weather", name="Weather", proxy_pass_url="http://127.0.0.1:9/mcp", headers=SECRET)
    client.force_login(operator)

    response = client.post(
        "/api/edit/weather", {"name": "Weather", "description": "d", "proxy_pass_url": thread.url("/mcp")}
    )
    server = Server.objects.get()
    check_server(server)

    assert response.status_code == 303
    assert server.headers == {}
    assert seen, "the check reached the new address"
    assert all("x-api-key" not in headers for headers in seen)
    audit = AuditEvent.objects.filter(action="server.update").get()
    assert audit.actor_name == "olga"
    assert audit.detail["headers_dropped"] == ["X-Api-Key"]
    assert audit.detail["origin"] == {"from": "http://127.0.0.1:9", "to": f"http://127.0.0.1:{thread.port}"}
    assert "s3cret" not in str(audit.detail)


def test_the_same_origin_keeps_the_headers(operator):
    server = ServerFactory(path="/weather", proxy_pass_url="http://127.0.0.1:9/mcp", headers=SECRET)

    server_update(actor=operator, server=server, proxy_pass_url="http://127.0.0.1:9/v2/mcp")

    server.refresh_from_db()
    assert server.headers == SECRET
    assert "headers_dropped" not in AuditEvent.objects.get().detail


def test_a_move_that_sets_its_own_headers_keeps_those(operator):
    server = ServerFactory(path="/weather", proxy_pass_url="http://127.0.0.1:9/mcp", headers=SECRET)

    server_update(
        actor=operator, server=server, proxy_pass_url="http://127.0.0.1:10/mcp", headers={"X-Api-Key": "new"}
    )

    server.refresh_from_db()
    assert server.headers == {"X-Api-Key": "new"}
