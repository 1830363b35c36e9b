"""Servers that need each user's own secret, through the gateway: each caller's call carries their own key
to the server (a real MCP server says which key it got), and a caller without one is asked in the way
their protocol revision defines, with the URL of their connections page."""

import http.client
import json

import anyio
import httpx2
import mcp_types
import pytest
from django.db import connection
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import URL_ELICITATION_REQUIRED

from accounts.choices import AuthMethod
from accounts.models import User
from accounts.principal import principal_for_user
from accounts.services.credentials import client_credential_create
from accounts.services.tokens import client_credentials_exchange
from connections.services import credential_secret_connect
from tests.factories import ServerFactory, ToolFactory
from tests.gateway.gateway_calls import gateway_fixture, post, run  # noqa: F401
from tests.mcp_servers import keyed_server_fixture  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}


@pytest.fixture
def keyed(keyed_server, scope_factory):
    scope_factory(
        "everything", group="users", server_rules=[{"server": "*", "methods": ["*"], "tools": ["*"]}]
    )
    return ServerFactory(
        path="/keyed",
        name="Keyed",
        proxy_pass_url=keyed_server,
        upstream_auth="user_secret",
        user_secret_header="X-API-Key: {secret}",
    )


@pytest.fixture
def users(member, token_for, keyed):
    made = {}
    for name in ("kim", "lee", "max"):
        user = member(name, "users")
        made[name] = token_for(user)
        if name != "max":
            principal = principal_for_user(user, auth_method=AuthMethod.SESSION)
            credential_secret_connect(actor=principal, target=keyed, user=user, secret=f"key-of-{name}")
    return made


async def whoami(client):
    return (await client.call_tool("whoami", {})).content[0].text


def test_a_first_call_asks_in_band_and_the_retried_call_in_the_same_session_carries_the_new_key(
    gateway, users, keyed, member
):
    for name in ("whoami", "add"):
        ToolFactory(server=keyed, name=name)
    max_user = User.objects.get(username="max")

    def connect_max():  # in a worker thread, whose database connection is closed after
        try:
            principal = principal_for_user(max_user, auth_method=AuthMethod.SESSION)
            credential_secret_connect(actor=principal, target=keyed, user=max_user, secret="key-of-max")
        finally:
            connection.close()

    async def first_call_then_retry(client):
        tools = sorted(tool.name for tool in (await client.list_tools()).tools)
        try:
            await client.call_tool("whoami", {})
        except MCPError as asked:
            error = asked.error
        await anyio.to_thread.run_sync(connect_max)
        again = (await client.call_tool("whoami", {})).content[0].text
        return tools, error, again

    tools, error, again = run(gateway.url("/keyed/mcp"), users["max"], first_call_then_retry)

    assert tools == ["add", "whoami"]  # the registry's tools, before any call could reach the server
    assert error.code == -32042
    assert error.data["elicitations"][0]["url"] == f"{gateway.url('')}/connections/keyed"
    assert again == "key-of-max"


def test_each_users_call_carries_their_own_key(gateway, users):
    url = gateway.url("/keyed/mcp")

    assert run(url, users["kim"], whoami) == "key-of-kim"
    assert run(url, users["lee"], whoami) == "key-of-lee"
    assert run(url, users["kim"], whoami) == "key-of-kim"  # from the process's cache this time


@pytest.mark.parametrize(
    ("version", "shape"),
    [("2026-07-28", "input_required"), ("2025-11-25", "url_elicitation"), ("2025-06-18", "tool_error")],
)
def test_a_caller_without_a_key_is_asked_as_their_revision_says(gateway, users, version, shape):
    headers = {"Authorization": f"Bearer {users['max']}", "MCP-Protocol-Version": version}
    if version == "2026-07-28":
        headers |= {"Mcp-Method": "tools/call", "Mcp-Name": "whoami"}

    status, _, body = post(gateway.port, "/keyed/mcp", CALL, headers)

    answer = json.loads(body)
    url = f"{gateway.url('')}/connections/keyed"
    why = "/keyed needs your own credential: connect it, then try again."
    assert (status, answer["id"]) == (200, 7)
    if shape == "input_required":
        assert answer["result"]["resultType"] == "input_required"
        assert answer["result"]["inputRequests"]["connect"] == {
            "method": "elicitation/create",
            "params": {"mode": "url", "message": why, "url": url},
        }
    elif shape == "url_elicitation":
        assert answer["error"]["code"] == URL_ELICITATION_REQUIRED == -32042
        [elicitation] = answer["error"]["data"]["elicitations"]
        assert {key: elicitation[key] for key in ("mode", "message", "url")} == {
            "mode": "url",
            "message": why,
            "url": url,
        }
        assert len(elicitation["elicitationId"]) >= 16
    else:
        assert answer["result"] == {
            "content": [{"type": "text", "text": f"{why} Connect at {url}"}],
            "isError": True,
        }


def test_a_stream_without_a_key_is_403_naming_the_page_and_a_service_account_cannot_connect(
    gateway, users, member
):
    made = client_credential_create(actor=None, user=member("robot", "users", is_service_account=True))
    robot = client_credentials_exchange(client_id=made.credential.client_id, client_secret=made.client_secret)
    robot = robot.access_token
    stream = _get(gateway.port, "/keyed/mcp", {"Authorization": f"Bearer {users['max']}"})
    status, _, body = post(gateway.port, "/keyed/mcp", CALL, {"Authorization": f"Bearer {robot}"})

    assert stream[0] == 403
    assert json.loads(stream[1])["error_code"] == "connection_required"
    assert json.loads(stream[1])["detail"].endswith(f"Connect at {gateway.url('')}/connections/keyed")
    assert (status, json.loads(body)["error_code"]) == (403, "permission_denied")


def _get(port, path, headers):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", path, headers={"Accept": "text/event-stream", **headers})
    response = connection.getresponse()
    return response.status, response.read()


def test_a_session_the_gateway_opened_has_no_stream_until_connected_and_ends_with_delete(gateway, users):
    bearer = {"Authorization": f"Bearer {users['max']}"}
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }

    status, answer_headers, body = post(gateway.port, "/keyed/mcp", initialize, bearer)
    session = {
        **bearer,
        "Mcp-Session-Id": answer_headers["mcp-session-id"],
        "MCP-Protocol-Version": "2025-06-18",
    }
    stream = _get(gateway.port, "/keyed/mcp", session)
    stranger = post(gateway.port, "/keyed/mcp", CALL, {**session, "Authorization": f"Bearer {users['kim']}"})
    ended = _request(gateway.port, "DELETE", "/keyed/mcp", session)
    after = post(gateway.port, "/keyed/mcp", CALL, session)

    assert status == 200
    assert json.loads(body)["result"]["protocolVersion"] == "2025-06-18"
    assert json.loads(body)["result"]["serverInfo"]["name"] == "Keyed"
    assert answer_headers["mcp-session-id"].startswith("registry-deferred-")
    assert stream[0] == 405
    assert ended == 200
    assert after[0] == 404
    assert stranger[0] == 404  # another caller never rides the session


def _request(port, method, path, headers):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request(method, path, headers=headers)
    response = connection.getresponse()
    response.read()
    return response.status


def test_a_2026_07_28_host_discovers_lists_is_asked_and_its_retried_call_carries_the_new_key(
    gateway, users, keyed
):
    ToolFactory(server=keyed, name="whoami")
    max_user = User.objects.get(username="max")
    asked = []

    def connect_max():  # in a worker thread, whose database connection is closed after
        try:
            principal = principal_for_user(max_user, auth_method=AuthMethod.SESSION)
            credential_secret_connect(actor=principal, target=keyed, user=max_user, secret="key-of-max")
        finally:
            connection.close()

    async def follow_the_link(context, params):
        asked.append((params.mode, params.url))  # the user opens it, signs in and connects
        await anyio.to_thread.run_sync(connect_max)
        return mcp_types.ElicitResult(action="accept")

    async def session():
        headers = {"Authorization": f"Bearer {users['max']}"}
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(20)) as http:
            transport = streamable_http_client(gateway.url("/keyed/mcp"), http_client=http)
            async with Client(
                transport, mode="auto", cache=None, elicitation_callback=follow_the_link
            ) as client:
                tools = [tool.name for tool in (await client.list_tools()).tools]
                called = (await client.call_tool("whoami", {})).content[0].text
                return client.protocol_version, tools, called

    version, tools, called = anyio.run(session)

    assert (version, tools, called) == ("2026-07-28", ["whoami"], "key-of-max")
    assert asked == [("url", f"{gateway.url('')}/connections/keyed")]
