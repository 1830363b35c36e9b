"""The A2A upstream of bench/gateway.py: an agent that answers every JSON-RPC `SendMessage` at once with a
completed task echoing the text (A2A v1.0's shape), so what is measured through the gateway is the gateway
(the official a2a-sdk's own handler takes tens of milliseconds a message, which would hide it). The
gateway's tests talk to the a2a-sdk agent (tests/a2a_agents.py).

Run: python bench/agent_upstream.py PORT
"""

import json
import sys
import uuid

import uvicorn

CARD = {"name": "Bench echo", "description": "Echoes", "version": "1", "supportedInterfaces": []}
NOT_FOUND = {"jsonrpc": "2.0", "error": {"code": -32001, "message": "Task not found"}}


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    request = json.loads(body) if body else {}
    if request.get("method") != "SendMessage":  # the health check's card read and task query
        return await _json(send, CARD if scope["method"] == "GET" else NOT_FOUND | {"id": request.get("id")})
    text = request["params"]["message"]["parts"][0]["text"]
    task = {
        "id": str(uuid.uuid4()),
        "contextId": str(uuid.uuid4()),
        "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [{"artifactId": "echo", "parts": [{"text": f"echo: {text}"}]}],
    }
    await _json(send, {"jsonrpc": "2.0", "id": request["id"], "result": {"task": task}})


async def _json(send, value) -> None:
    answer = json.dumps(value).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": answer})


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
