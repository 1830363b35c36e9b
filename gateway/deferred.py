"""Sessions opened before the caller connected their credential (servers that need each user's own:
connections/). Without a credential nothing can reach the server, yet an MCP host must get through its
handshake to be asked for one in-band (gateway/asking.py) and to retry. So the gateway opens the session
itself: it answers `initialize` (as the server's registry entry describes it) or 2026-07-28's
`server/discover`, `ping`, notifications and `tools/list` (the tools the registry knows and shows the
caller), with a session id of its own bound to the caller like any other (2026-07-28 has no sessions).
Every other request asks for the connection.

Once the caller has connected, the next request of that session opens the real one: the gateway replays
the client's `initialize` to the server with the caller's credential, sends `notifications/initialized`,
and from then on translates the session id both ways (`Mcp-Session-Id` out, and back in the answer), so
the client keeps its session and its retried call simply succeeds. The pairing lives in Redis with the
session's binding, so any gateway process serves the session."""

from __future__ import annotations

import json
import secrets

from channels.db import database_sync_to_async

from core.errors import ErrorCode
from core.protocol_versions import HANDSHAKE_VERSIONS, STATELESS_VERSION
from gateway import sessions, telemetry, upstream
from gateway.routing import Refusal
from gateway.sign_in import sign_in_refused
from servers.policies import tools_visible

PREFIX = "registry-deferred-"
NO_SESSION = "-"  # the server opened none (it is stateless): forward without a session id
LOCAL_METHODS = frozenset({"initialize", "server/discover", "ping", "tools/list"})
# Every result of the stateless revision says it is complete and how long it may be cached.
STATELESS_RESULT = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}


def is_deferred(session_id: str | None) -> bool:
    return bool(session_id) and session_id.startswith(PREFIX)


async def pairing(server_path: str, session_id: str) -> dict | None:
    """The deferred session's record: the client's `initialize` params and the server's session id, once
    there is one (NO_SESSION for a stateless server)."""
    return await sessions.record(sessions.Kind.DEFERRED, server_path, session_id)


async def _keep(server_path: str, session_id: str, record: dict) -> None:
    await sessions.keep(sessions.Kind.DEFERRED, server_path, session_id, record)


def answerable(checked) -> bool:
    """Whether every request of the body is one the gateway answers for a session it opened."""
    return all(message.get("method") in LOCAL_METHODS or "id" not in message for message in checked.forward)


async def answer(
    server, principal, checked, session_id: str | None, versions: list[str]
) -> tuple[int, object, dict]:
    """(status, JSON-RPC answer, headers) of the gateway's own answer to a body `answerable` accepts;
    `versions` are the protocol revisions of its messages, in order."""
    replies, opened = [], None
    for message, version in zip(checked.forward, versions, strict=True):
        if "id" not in message:
            continue  # notifications (`notifications/initialized`): nobody to tell yet
        method = message["method"]
        if method == "initialize":
            opened = PREFIX + secrets.token_urlsafe(24)
            result = await _open(server, principal, message, opened)
        elif method == "server/discover":
            result = {
                "supportedVersions": [STATELESS_VERSION],
                "capabilities": {"tools": {"listChanged": False}},
                "instructions": _instructions(server),
            }
        elif method == "ping":
            result = {}
        else:
            result = {"tools": await database_sync_to_async(_tools)(server, principal)}
        if version >= STATELESS_VERSION:
            result = {**result, **STATELESS_RESULT}
        replies.append({"jsonrpc": "2.0", "id": message["id"], "result": result})
    replies += checked.denied  # a batch's requests the caller may not send are answered as ever
    extra = {"mcp-session-id": opened} if opened else {}
    if not replies:
        return 202, None, extra
    return 200, replies if checked.batch else replies[0], extra


async def _open(server, principal, message: dict, session_id: str) -> dict:
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    asked = params.get("protocolVersion")
    version = asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
    await sessions.bind(server.path, session_id, principal)
    record = {"init": {**params, "protocolVersion": version}, "upstream": ""}
    await _keep(server.path, session_id, record)
    return {
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": False}},
        "serverInfo": {"name": server.name or server.path, "version": server.version or "unknown"},
        "instructions": _instructions(server),
    }


def _instructions(server) -> str:
    return (
        f"{server.path} acts as each user with their own credential; when a call asks for it, follow the "
        "link to connect yours, then try again."
    )


def _tools(server, principal) -> list[dict]:
    return [
        {
            "name": tool.name,
            "description": tool.description,
            "inputSchema": tool.input_schema or {"type": "object"},
        }
        for tool in tools_visible(principal, server).order_by("name")
    ]


async def upstream_session(server, session_id: str, record: dict, credential_headers: dict) -> str:
    """The server's session paired with the deferred one, opened now with the caller's credential when
    it is not yet."""
    if record.get("upstream"):
        return record["upstream"]
    paired = await open_upstream_session(server, record["init"], credential_headers)
    record["upstream"] = paired
    await _keep(server.path, session_id, record)
    return paired


async def open_upstream_session(server, init_params: dict, credential_headers: dict) -> str:
    """A session of the server for a client the gateway stands in for: the client's `initialize`
    (`init_params`) replayed with the caller's credential, then `notifications/initialized`; the server's
    session id (NO_SESSION when it keeps none). SignInRefused when it refuses the caller's sign-in,
    Refusal (502) when it refuses otherwise or cannot be reached."""
    base = {
        **credential_headers,
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
    }
    init = {
        "jsonrpc": "2.0",
        "id": "registry-deferred-initialize",
        "method": "initialize",
        "params": init_params,
    }
    try:
        async with upstream.session().post(
            server.proxy_pass_url, data=json.dumps(init), headers=base, timeout=upstream.timeout()
        ) as response:
            await response.read()
            if refused := sign_in_refused(server, response):
                raise refused
            if response.status >= 400:
                raise Refusal(
                    502,
                    ErrorCode.UPSTREAM_UNAVAILABLE,
                    f"The MCP server at {server.path} refused to open a session ({response.status}).",
                )
            paired = response.headers.get("mcp-session-id") or NO_SESSION
        if paired != NO_SESSION:  # the metrics of its calls name the client, as a session opened through us
            client = init_params.get("clientInfo") if isinstance(init_params.get("clientInfo"), dict) else {}
            name = client.get("name")
            await telemetry.session_started(paired, name if isinstance(name, str) else "")
        follow = {**base, "mcp-protocol-version": init_params.get("protocolVersion", "")}
        if paired != NO_SESSION:
            follow["mcp-session-id"] = paired
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        async with upstream.session().post(
            server.proxy_pass_url, data=json.dumps(initialized), headers=follow, timeout=upstream.timeout()
        ) as response:
            await response.read()
    except upstream.ERRORS as error:
        raise Refusal(
            502,
            ErrorCode.UPSTREAM_UNAVAILABLE,
            f"The MCP server at {server.path} could not be reached ({type(error).__name__}).",
        ) from None
    return paired


async def forget(server_path: str, session_id: str) -> None:
    await sessions.forget(sessions.Kind.DEFERRED, server_path, session_id)
