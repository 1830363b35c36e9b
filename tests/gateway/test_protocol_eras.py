"""Every MCP revision from 2025-03-26 to 2026-07-28 through the gateway, with the official SDK client on
one side and a server that speaks only that revision on the other; and 2026-07-28's protocol headers,
which travel to the server and must agree with the body the gateway authorizes."""

import json

import pytest

from tests.factories import ServerFactory
from tests.gateway.gateway_calls import (  # noqa: F401
    caller_fixture,
    gateway_fixture,
    list_and_call,
    post,
    run,
)
from tests.mcp_servers import MODERN, era_servers_fixture  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

ADD_AND_ECHO = {
    "server": "/clock",
    "methods": ["initialize", "tools/list", "tools/call"],
    "tools": ["add", "echo"],
}
DENIED = "Access denied: 'gina' may not call tool 'current_time' on server '/clock'."
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}


@pytest.mark.parametrize(
    "version, mode",
    [
        (MODERN, MODERN),
        (MODERN, "auto"),
        ("2025-11-25", "legacy"),
        ("2025-11-25", "auto"),
        ("2025-06-18", "legacy"),
        ("2025-03-26", "legacy"),
        ("2025-03-26", "auto"),
    ],
)
def test_each_protocol_era_lists_only_its_tools_and_calls_them(gateway, caller, era_servers, version, mode):
    ServerFactory(path="/clock", proxy_pass_url=era_servers[version])
    token = caller(ADD_AND_ECHO)

    tools, added, denied = run(gateway.url("/clock/mcp"), token, list_and_call, mode=mode)

    assert (tools, added, denied) == (["add", "echo"], "5", DENIED)


def modern_call(gateway, token, body: dict, **headers):
    return post(
        gateway.port,
        "/clock/mcp",
        body,
        {"Authorization": f"Bearer {token}", "MCP-Protocol-Version": MODERN, **headers},
    )


def call(name: str) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": name, "arguments": {"a": 1, "b": 2}, "_meta": META},
    }


def test_a_stateless_request_with_agreeing_headers_reaches_the_server(gateway, caller, era_servers):
    ServerFactory(path="/clock", proxy_pass_url=era_servers[MODERN])
    token = caller(ADD_AND_ECHO)

    status, _, body = modern_call(
        gateway, token, call("add"), **{"Mcp-Method": "tools/call", "Mcp-Name": "add"}
    )

    assert status == 200
    assert b'"text":"3"' in body.replace(b" ", b"")


@pytest.mark.parametrize(
    "headers, problem",
    [
        (
            {"Mcp-Method": "tools/list", "Mcp-Name": "add"},
            "The Mcp-Method header does not match the body's method.",
        ),
        (
            {"Mcp-Method": "tools/call", "Mcp-Name": "current_time"},
            "The Mcp-Name header does not match the body's name or uri.",
        ),
        (
            {"Mcp-Method": "tools/call", "Mcp-Name": "=?base64?Y3VycmVudF90aW1l?="},
            "The Mcp-Name header does not match the body's name or uri.",
        ),
        (
            {"Mcp-Method": "tools/call", "Mcp-Name": "add", "MCP-Protocol-Version": "2025-11-25"},
            "The MCP-Protocol-Version header does not match the body's protocol version.",
        ),
    ],
)
def test_protocol_headers_that_disagree_with_the_body_are_refused(
    gateway, caller, era_servers, headers, problem
):
    ServerFactory(path="/clock", proxy_pass_url=era_servers[MODERN])
    token = caller(ADD_AND_ECHO)

    status, _, body = modern_call(gateway, token, call("add"), **headers)

    assert status == 400
    assert json.loads(body) == {"jsonrpc": "2.0", "id": 7, "error": {"code": -32020, "message": problem}}


def test_a_routing_header_sent_twice_is_refused(gateway, caller, era_servers):
    import http.client

    ServerFactory(path="/clock", proxy_pass_url=era_servers[MODERN])
    token = caller(ADD_AND_ECHO)
    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=10)
    connection.putrequest("POST", "/clock/mcp", skip_host=True)
    for name, value in [
        ("Host", f"127.0.0.1:{gateway.port}"),
        ("Authorization", f"Bearer {token}"),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", MODERN),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "add"),
        ("Mcp-Name", "current_time"),
    ]:
        connection.putheader(name, value)
    payload = json.dumps(call("add")).encode()
    connection.putheader("Content-Length", str(len(payload)))
    connection.endheaders(payload)
    response = connection.getresponse()

    assert response.status == 400
    assert json.loads(response.read())["error"] == {
        "code": -32020,
        "message": "The mcp-name header is sent more than once.",
    }
