"""A session's POST that arrives after its GET stream reaches the server after that stream is open, so a
request the server sends on the stream (sampling, elicitation) always has somewhere to go."""

import asyncio
import json
import socket
import time

import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from tests.factories import ServerFactory
from tests.gateway.gateway_calls import caller_fixture, gateway_fixture, post  # noqa: F401
from tests.mcp_servers import UvicornThread, loopback_socket

pytestmark = pytest.mark.django_db(transaction=True)

STREAM_OPENS_AFTER = 0.3  # the server takes this long to answer a GET with its headers


def slow_stream_app(seen: list[str]):
    async def mcp(request):
        if request.method == "GET":
            seen.append("get arrives")
            await asyncio.sleep(STREAM_OPENS_AFTER)
            seen.append("stream open")

            async def events():
                yield b": open\n\n"
                await asyncio.sleep(5)

            return StreamingResponse(events(), media_type="text/event-stream")
        body = await request.json()
        seen.append(f"post {body['method']}")
        answer = JSONResponse({"jsonrpc": "2.0", "id": body.get("id"), "result": {}})
        answer.headers["mcp-session-id"] = "s-1"
        return answer

    return Starlette(routes=[Route("/mcp", mcp, methods=["GET", "POST"])])


def raw(port: int, method: str, token: str, body: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    head = (
        f"{method} /slow/mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"Mcp-Session-Id: s-1\r\nAccept: application/json, text/event-stream\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    sock.sendall(head.encode() + body)
    return sock


def test_a_post_after_a_get_stream_reaches_the_server_once_the_stream_is_open(gateway, caller):
    seen: list[str] = []
    upstream = UvicornThread(slow_stream_app(seen), loopback_socket()).start()
    ServerFactory(path="/slow", proxy_pass_url=upstream.url("/mcp"))
    token = caller({"server": "/slow", "methods": ["*"], "tools": ["*"]})
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    assert post(gateway.port, "/slow/mcp", initialize, {"Authorization": f"Bearer {token}"})[0] == 200
    seen.clear()

    stream = raw(gateway.port, "GET", token)
    time.sleep(0.05)
    call = raw(
        gateway.port, "POST", token, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}).encode()
    )
    call.settimeout(5)
    answered = call.recv(4096)
    for sock in (stream, call):
        sock.close()
    upstream.stop()

    assert answered.startswith(b"HTTP/1.1 200")
    assert seen == ["get arrives", "stream open", "post ping"]
