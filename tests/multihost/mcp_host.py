"""The MCP server host of the multi-host tests: a real streamable-HTTP server of the official SDK with two
tools, and a small control surface the test drives over the lab's network:

    GET  /control/calls        every JSON-RPC request seen: [{"method", "peer", "at"}]
    POST /control/slow?seconds=N   tools/list waits N seconds before answering (0: not at all)
    POST /control/fail?on=1    every MCP request answers 500 (the server turns unhealthy)

    python -m tests.multihost.mcp_host HOST PORT
"""

import asyncio
import json
import sys
import time

import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server

STATE = {"slow": 0.0, "fail": False, "calls": []}
TOOLS = [
    types.Tool(
        name="add",
        description="Add two integers.",
        input_schema={
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    ),
    types.Tool(
        name="echo",
        description="Return the text unchanged.",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    ),
]


async def list_tools(ctx, params) -> types.ListToolsResult:
    if STATE["slow"]:
        await asyncio.sleep(STATE["slow"])
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    text = str(arguments["a"] + arguments["b"]) if params.name == "add" else str(arguments.get("text", ""))
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def application(host: str):
    server = Server("Lab Tools", on_list_tools=list_tools, on_call_tool=call_tool)
    mcp = server.streamable_http_app(host=host)  # not loopback: no DNS-rebinding allow-list

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return await mcp(scope, receive, send)
        path = scope["path"]
        if path.startswith("/control/"):
            return await control(scope, send)
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        _record(scope, body)
        if STATE["fail"]:
            return await _answer(send, 500, {"error": "failing on purpose"})
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await mcp(scope, replay, send)

    return app


def _record(scope, body: bytes) -> None:
    try:
        method = json.loads(body).get("method") if body else None
    except (ValueError, AttributeError):
        method = None
    peer = (scope.get("client") or ("", 0))[0]
    STATE["calls"].append({"method": method or scope["method"], "peer": peer, "at": time.time()})


async def control(scope, send):
    query = dict(part.split("=", 1) for part in scope["query_string"].decode().split("&") if "=" in part)
    if scope["path"] == "/control/slow":
        STATE["slow"] = float(query.get("seconds", "0"))
    elif scope["path"] == "/control/fail":
        STATE["fail"] = query.get("on") == "1"
    await _answer(send, 200, {"slow": STATE["slow"], "fail": STATE["fail"], "calls": STATE["calls"]})


async def _answer(send, status: int, body: dict) -> None:
    payload = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


if __name__ == "__main__":
    host, port = sys.argv[1], int(sys.argv[2])
    uvicorn.run(application(host), host=host, port=port, log_level="warning", lifespan="on")
