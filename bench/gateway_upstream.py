"""The upstream of bench/gateway.py: an MCP server (official SDK) answering JSON on loopback, stateless
unless told to keep sessions. It offers `add` and 49 more tools, so a tools/list carries 50.

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


def _more(index: int):
    def tool(text: str) -> str:
        return text

    tool.__name__ = f"tool_{index:02d}"
    tool.__doc__ = f"Tool number {index}, for lists of fifty."
    return tool


for _index in range(1, 50):
    server.tool()(_more(_index))


if __name__ == "__main__":
    sessions = sys.argv[2:] == ["sessions"]
    app = server.streamable_http_app(json_response=True, stateless_http=not sessions)
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
