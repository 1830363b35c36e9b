"""The upstream of bench/gateway.py: an MCP server (official SDK) answering JSON on loopback, stateless
unless told to keep sessions.

Run: python bench/gateway_upstream.py PORT [sessions]
"""

import sys

import uvicorn
from mcp.server import MCPServer

server = MCPServer("Bench upstream", log_level="WARNING")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


if __name__ == "__main__":
    sessions = sys.argv[2:] == ["sessions"]
    app = server.streamable_http_app(json_response=True, stateless_http=not sessions)
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
