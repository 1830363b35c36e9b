"""The A2A upstream of bench/gateway.py: the tests' echo agent (official a2a-sdk, JSON-RPC at `/`), each
message answered by a task that completes with the text echoed.

Run: python bench/agent_upstream.py PORT
"""

import socket
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.a2a_agents import echo_agent_app  # noqa: E402

if __name__ == "__main__":
    import uvicorn

    port = int(sys.argv[1])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    app = echo_agent_app(f"http://127.0.0.1:{port}/")
    config = uvicorn.Config(app, log_level="warning", access_log=False, http="httptools")
    uvicorn.Server(config).run(sockets=[sock])
