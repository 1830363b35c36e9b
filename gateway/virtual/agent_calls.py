"""One A2A request from a virtual server to an agent it carries as tools (gateway/virtual/agent_tools.py),
through the pipeline's exchange stage (the one credential resolver, the fair share, one retry on a
refused sign-in): JSON-RPC, v1.0, or v0.3 to an agent whose card names only v0.3 (the request translated,
its answers read back into v1.0's shape, so the rest of the bridge reads one shape).

`asked` sends a request and reads its one answer. `followed` sends a message as `SendStreamingMessage`
(v0.3 `message/stream`) and follows the agent's own event stream, through the gateway's one reader of
event streams (gateway/streams.py): the task the events build up, `heard(task)` told of each status
update, until the task ends, asks for input, or the stream ends."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from urllib.parse import quote

from django.conf import settings

from agents.a2a import a2a_interfaces
from gateway import exchange, streams, upstream
from gateway.a2a import calls
from gateway.routing import Refusal
from gateway.sign_in import sign_in_refused
from gateway.virtual.agent_results import ASKING, TERMINAL, state
from gateway.virtual.members import Caller
from servers.upstream_auth import CredentialUnavailable


class AgentFailed(Exception):
    pass


def a2a(method: str, params: dict) -> dict:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


def streams_answers(agent) -> bool:
    """Whether the agent's card says it streams (`capabilities.streaming`)."""
    return isinstance(agent.capabilities, dict) and agent.capabilities.get("streaming") is True


async def asked(caller: Caller, agent, request: dict) -> dict:
    """The A2A result of one request to the agent (a JSON-RPC request's `result`, or its HTTP+JSON twin's
    answer), in v1.0's shape."""

    async def read(response, wire: Wire) -> dict:
        raw = await upstream.read_bounded(response, settings.GATEWAY_MAX_REWRITE_BYTES)
        return _result_of(agent, raw, request["method"], wire)

    return await _carried(caller, agent, request, read)


async def followed(caller: Caller, agent, request: dict, heard, deadline: float) -> dict:
    """The answer to a `SendMessage` request sent as a stream: {"task": the task as its events left it}
    or {"message": the agent's message}; `heard(task)` is awaited on each status update. The stream is
    left at `deadline` (time.monotonic()), with the task as it was then."""
    streaming = {**request, "method": "SendStreamingMessage"}
    kept: dict = {}

    async def read(response, wire: Wire) -> dict:
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            raw = await upstream.read_bounded(response, settings.GATEWAY_MAX_REWRITE_BYTES)
            return _result_of(agent, raw, "SendMessage", wire)
        limit = settings.GATEWAY_MAX_REWRITE_BYTES
        reader = streams.EventStream(None, agent.path, filtering=False, limit=limit, inspect=True)
        held = 0  # the bytes of the events that carried artifacts: what the task keeps, bounded as one answer
        try:
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                async for chunk in response.content.iter_any():
                    reader.feed(chunk)
                    if reader.cut:
                        raise AgentFailed(
                            f"The agent at {agent.path} sent an event larger than the gateway reads."
                        )
                    for data in reader.drained():
                        held += len(data) if b'"artifact' in data else 0
                        if held > limit:
                            raise AgentFailed(
                                f"The agent at {agent.path} sent more artifacts than the gateway reads "
                                f"({limit} bytes)."
                            )
                        if await _folded(agent, data, wire, kept, heard):
                            return kept
        except TimeoutError:
            if kept:
                return kept
            raise AgentFailed(f"The agent at {agent.path} did not answer in time.") from None
        reader.close()
        for data in reader.drained():
            await _folded(agent, data, wire, kept, heard)
        if not kept:
            raise AgentFailed(f"The agent at {agent.path} ended its stream without an answer.")
        return kept

    return await _carried(caller, agent, streaming, read, accept="text/event-stream")


async def _folded(agent, data: bytes, wire: Wire, kept: dict, heard) -> bool:
    """One event of the agent's stream folded into `kept` ({"task"} or {"message"}); whether the answer
    is over (a message, or a task that ended or asks for input)."""
    event = _result_of(agent, data, "SendStreamingMessage", wire)
    if "message" in event:
        kept.clear()
        kept["message"] = event["message"]
        return True
    if isinstance(event.get("task"), dict):
        kept["task"] = event["task"]
    task = kept.setdefault("task", {"id": None, "status": {}, "artifacts": []})
    if isinstance(event.get("artifactUpdate"), dict):
        update = event["artifactUpdate"]
        artifact = update.get("artifact") if isinstance(update.get("artifact"), dict) else {}
        task["id"] = task.get("id") or update.get("taskId")
        artifacts = [a for a in task.get("artifacts") or [] if isinstance(a, dict)]
        same = next((a for a in artifacts if a.get("artifactId") == artifact.get("artifactId")), None)
        if same is not None and update.get("append"):
            same["parts"] = [*(same.get("parts") or []), *(artifact.get("parts") or [])]
        elif same is not None:
            artifacts[artifacts.index(same)] = artifact
        else:
            artifacts.append(artifact)
        task["artifacts"] = artifacts
    if isinstance(event.get("statusUpdate"), dict):
        update = event["statusUpdate"]
        task["id"] = task.get("id") or update.get("taskId")
        task["contextId"] = task.get("contextId") or update.get("contextId")
        if isinstance(update.get("status"), dict):
            task["status"] = update["status"]
        if state(task) not in TERMINAL | ASKING:
            await heard(task)
    return state(task) in TERMINAL | ASKING


@dataclass(frozen=True)
class Wire:
    """How the bridge speaks to an agent: HTTP+JSON (`rest`) or JSON-RPC, of v0.3 (`legacy`) or v1.0."""

    rest: bool
    legacy: bool


REST_ROUTES = {  # HTTP+JSON of v1.0: (HTTP method, path under the interface's URL)
    "SendMessage": ("POST", "/message:send"),
    "SendStreamingMessage": ("POST", "/message:stream"),
    "GetTask": ("GET", "/tasks/{}"),
    "CancelTask": ("POST", "/tasks/{}:cancel"),
}


def wire_of(agent) -> Wire:
    """JSON-RPC when the card names a JSON-RPC interface (v0.3 when it names no v1.0 one), else HTTP+JSON."""
    bindings = {interface.get("protocolBinding") for interface in a2a_interfaces(agent)}
    if "JSONRPC" not in bindings and "HTTP+JSON" in bindings:
        return Wire(rest=True, legacy=_only_v03(agent, "HTTP+JSON"))
    return Wire(rest=False, legacy=_only_v03(agent, "JSONRPC"))


async def _carried(caller: Caller, agent, request: dict, read, accept: str = "application/json") -> dict:
    """What `read(response, wire)` makes of the agent's answer to `request`, through the exchange."""
    wire = wire_of(agent)
    if wire.rest and wire.legacy:
        raise AgentFailed(
            f"The agent at {agent.path} offers only HTTP+JSON of A2A 0.3; its tools need JSON-RPC or "
            "HTTP+JSON of 1.0."
        )
    if wire.rest:
        verb, path = REST_ROUTES[request["method"]]
        params = request["params"]
        path = path.format(quote(str(params.get("id", "")), safe=""))
        url = calls.Call(request["method"], params, rest=True, legacy=False, path=path).upstream_url(agent)
        body = json.dumps(params).encode() if verb == "POST" else None
    else:
        sent = _as_v03(request) if wire.legacy else request
        verb, url, body = "POST", calls.from_jsonrpc(sent).upstream_url(agent), json.dumps(sent).encode()

    async def attempt(credential: dict[str, str], _send) -> dict:
        headers = {**credential, "accept": accept}
        if body is not None:
            headers["content-type"] = "application/json"
        if not wire.legacy:
            headers["a2a-version"] = "1.0"
        try:
            async with upstream.session().request(
                verb, url, data=body, headers=headers, timeout=upstream.timeout(), allow_redirects=False
            ) as response:
                if refused := sign_in_refused(agent, response):
                    raise refused
                return await read(response, wire)
        except upstream.ERRORS as error:
            raise AgentFailed(
                f"The agent at {agent.path} could not be reached ({type(error).__name__})."
            ) from None

    async def over_share(full: Refusal) -> dict:
        raise AgentFailed(full.detail)

    try:
        return await exchange.carried(agent, caller.principal, caller.epoch, url, attempt, over_share)
    except CredentialUnavailable as unavailable:
        raise AgentFailed(str(unavailable)) from None


def _result_of(agent, raw: bytes | None, method: str, wire: Wire) -> dict:
    """The result of one answer (or stream event) of the agent, in v1.0's shape: a JSON-RPC answer's
    `result`, or HTTP+JSON's body itself."""
    try:
        answer = json.loads(raw or b"")
    except ValueError:
        raise AgentFailed(f"The agent at {agent.path} answered something that is not JSON.") from None
    if isinstance(answer, dict) and isinstance(answer.get("error"), dict):
        said = str(answer["error"].get("message", ""))[:300]
        raise AgentFailed(f"The agent at {agent.path} refused: {said}")
    result = answer if wire.rest else (answer.get("result") if isinstance(answer, dict) else None)
    if not isinstance(result, dict):
        raise AgentFailed(f"The agent at {agent.path} answered without a result.")
    return _from_v03(result, method) if wire.legacy else result


V03_METHODS = {
    "SendMessage": "message/send",
    "SendStreamingMessage": "message/stream",
    "GetTask": "tasks/get",
    "CancelTask": "tasks/cancel",
}
SENDS = ("SendMessage", "SendStreamingMessage")


def _only_v03(agent, binding: str) -> bool:
    """Whether the card names no v1.0 interface of `binding`, only v0.3 ones."""
    versions = {
        str(interface.get("protocolVersion") or "")
        for interface in a2a_interfaces(agent)
        if interface.get("protocolBinding") == binding
    }
    versions.discard("")
    versions = versions or {str(agent.protocol_version or "")}
    return all(version.startswith("0.") for version in versions)


def _as_v03(request: dict) -> dict:
    """A v1.0 request as v0.3 says it: its method's old name; a message's kind, lower-case role and kinds
    on its parts."""
    params = dict(request["params"])
    if isinstance(params.get("message"), dict):
        message = dict(params["message"])
        parts = [
            {"kind": "data", "data": part["data"]}
            if "data" in part
            else {"kind": "text", "text": part.get("text", "")}
            for part in message.get("parts") or []
        ]
        message |= {"kind": "message", "role": "user", "parts": parts}
        params["message"] = message
    return {**request, "method": V03_METHODS[request["method"]], "params": params}


def _from_v03(result: dict, method: str) -> dict:
    """A v0.3 answer in v1.0's shape: a task or a message under its name for the sends (a task alone
    for the others), a stream's updates under theirs, states as TASK_STATE_*, parts without their kinds."""
    kind = result.get("kind")
    if kind == "message":
        return {"message": _message_v1(result)}
    if kind == "status-update":
        status = result.get("status") if isinstance(result.get("status"), dict) else {}
        return {"statusUpdate": {**result, "status": _status_v1(status)}}
    if kind == "artifact-update":
        artifact = result.get("artifact") if isinstance(result.get("artifact"), dict) else {}
        return {
            "artifactUpdate": {**result, "artifact": {**artifact, "parts": _parts_v1(artifact.get("parts"))}}
        }
    status = result.get("status") if isinstance(result.get("status"), dict) else {}
    task = {
        **result,
        "status": _status_v1(status),
        "artifacts": [
            {**artifact, "parts": _parts_v1(artifact.get("parts"))}
            for artifact in result.get("artifacts") or []
            if isinstance(artifact, dict)
        ],
    }
    return {"task": task} if method in SENDS else task


def _status_v1(status: dict) -> dict:
    state_name = "TASK_STATE_" + str(status.get("state", "unknown")).upper().replace("-", "_")
    return {**status, "state": state_name, "message": _message_v1(status.get("message"))}


def _message_v1(message) -> dict | None:
    if not isinstance(message, dict):
        return None
    return {**message, "parts": _parts_v1(message.get("parts"))}


def _parts_v1(parts) -> list[dict]:
    shown = []
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("kind") == "file" and isinstance(part.get("file"), dict):
            file = part["file"]
            shown.append(
                {"raw": file.get("bytes"), "url": file.get("uri"), "mediaType": file.get("mimeType")}
            )
        elif part.get("kind") == "data":
            shown.append({"data": part.get("data")})
        else:
            shown.append({"text": part.get("text")})
    return shown
