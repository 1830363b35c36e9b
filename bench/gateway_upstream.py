"""The upstream of bench/gateway.py: a stateless MCP server (official SDK) answering JSON on loopback.

Run: python bench/gateway_upstream.py PORT
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
    app = server.streamable_http_app(json_response=True, stateless_http=True)
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
