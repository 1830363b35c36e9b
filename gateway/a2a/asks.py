"""An agent that needs the caller's own credential (a secret or a sign-in: connections/resolver.py) and has
none usable: the caller is asked in the protocol, as an MCP host is asked in MCP (gateway/asking.py).

- A message (`SendMessage`, `SendStreamingMessage`; v0.3 `message/send`, `message/stream`) is answered by a
  task in A2A's own state for it, `auth-required` (v1.0 `TASK_STATE_AUTH_REQUIRED`), whose status message
  says where to connect, with the link also as data (`{"connectUrl": ...}`), so a person reads it and a
  client can open it. The task is the gateway's, not the agent's: it is claimed by nobody, so naming it
  later is "task not found", and the client sends its message again once connected.
- Every other method, which answers no task, gets the binding's error (JSON-RPC's, or REST's
  PERMISSION_DENIED) with the same text and link.
A caller who cannot connect one (a service account, a caller without an account) gets the error alike,
with no link."""

from __future__ import annotations

import json
import uuid

from core.public_url import base_url_of_scope
from gateway import forwarding
from gateway.a2a import calls, tasks

STREAM_START = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]


async def ask(scope, send, call: calls.Call, message_params: dict, missing) -> None:
    """Answer `call` with the ask for the credential `missing` (servers/upstream_auth.CredentialMissing)."""
    url = f"{base_url_of_scope(scope)}{missing.connect_path}" if missing.connect_path else None
    text = str(missing) + (f" Connect at {url}" if url else "")
    if call.method not in tasks.SENDS or url is None:
        data = {"connectUrl": url} if url else None
        return await forwarding.json_answer(send, *call.refused(calls.ACCESS_DENIED, text, data, None))
    task = _task(call, message_params, text, url)
    if call.method not in tasks.STREAMS:
        body = task if call.rest and call.legacy else _wrapped(call, task)
        return await forwarding.json_answer(send, 200, body)
    event = json.dumps(_wrapped(call, task), separators=(",", ":")).encode()
    await send({"type": "http.response.start", "status": 200, "headers": STREAM_START})
    await send({"type": "http.response.body", "body": b"data: " + event + b"\n\n"})


def _wrapped(call: calls.Call, task: dict) -> dict:
    """The answer's body: a JSON-RPC response (v1.0 results hold `{"task": ...}`, v0.3's the task), or
    REST's `{"task": ...}`."""
    result = task if call.legacy else {"task": task}
    return result if call.rest else {"jsonrpc": "2.0", "id": call.request_id, "result": result}


def _task(call: calls.Call, params: dict, text: str, url: str) -> dict:
    """A task in the auth-required state, in the shape of the call's protocol version."""
    sent = params.get("message") if isinstance(params.get("message"), dict) else {}
    context = sent.get("contextId") if isinstance(sent.get("contextId"), str) else str(uuid.uuid4())
    task_id, message_id = str(uuid.uuid4()), str(uuid.uuid4())
    if call.legacy:
        message = {
            "kind": "message",
            "messageId": message_id,
            "role": "agent",
            "parts": [{"kind": "text", "text": text}, {"kind": "data", "data": {"connectUrl": url}}],
            "taskId": task_id,
            "contextId": context,
        }
        status = {"state": "auth-required", "message": message}
        return {"kind": "task", "id": task_id, "contextId": context, "status": status}
    message = {
        "messageId": message_id,
        "role": "ROLE_AGENT",
        "parts": [{"text": text}, {"data": {"connectUrl": url}}],
        "taskId": task_id,
        "contextId": context,
    }
    status = {"state": "TASK_STATE_AUTH_REQUIRED", "message": message}
    return {"id": task_id, "contextId": context, "status": status}
