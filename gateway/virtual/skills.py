"""The skills a virtual server serves, by the MCP skills extension (SEP-2640): the gateway answers these
itself from the registry's approved versions (skills/over_mcp.py), never from an upstream:

- `skills/list`, paged, each entry whole (its frontmatter and every file's digest), with `ttlMs` and
  `cacheScope` for 2026-07-28 clients;
- `skills/get` of a `SKILL.md` URI, `-32602` for a URI that names no skill the caller is served;
- `resources/read` of `skill://<skill path>/<file>`, the bytes checked against their approved digest;
- `resources/directory/read` of a skill's folder (`directoryRead: true` is declared).

A skill the caller may not see is absent from the list and unknown to every read (core/visibility.py),
after the one rule at the virtual path has let the method through (gateway/decision.py). Each process
keeps the skills a caller is served until the virtual servers' epoch moves (any change of a virtual
server's skills or of a skill: virtual_servers/cache.py) or the caller's rights do."""

from __future__ import annotations

import base64
import binascii

from channels.db import database_sync_to_async

from core.epochs import MISSING, EpochCache
from core.errors import ApiError
from gateway import jsonrpc, sessions
from gateway.virtual.members import Caller
from skills import over_mcp
from skills.selectors import approved_bytes, served_over_mcp

INVALID_PARAMS = -32602
METHODS = frozenset({"skills/list", "skills/get", "resources/directory/read"})
PAGE_SIZE = 100
LIST_TTL_MS = 60_000
SERVED = EpochCache("virtual-skills", max_entries=10_000)


def capability(virtual) -> dict:
    """The extension as `initialize` and `server/discover` declare it, when the virtual server has skills."""
    return {over_mcp.EXTENSION: {"directoryRead": True}} if virtual.skill_ids else {}


def concerns(virtual, message: dict) -> bool:
    """Whether the gateway answers this request from the virtual server's skills."""
    if not virtual.skill_ids:
        return False
    method = message.get("method")
    if method in METHODS:
        return True
    params = message.get("params")
    uri = params.get("uri") if isinstance(params, dict) else None
    return method == "resources/read" and isinstance(uri, str) and uri.startswith(over_mcp.SCHEME)


async def answered(virtual, caller: Caller, message: dict) -> dict:
    """The answer to a request `concerns` said is the skills'."""
    request_id, method = message["id"], message["method"]
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    served = await _served(virtual, caller)
    if method == "skills/list":
        return _listed(request_id, served, params.get("cursor"), caller.stateless)
    uri = params.get("uri")
    if not isinstance(uri, str):
        return jsonrpc.error_message(request_id, INVALID_PARAMS, f"{method} needs params.uri.")
    if method == "skills/get":
        entry = served.entry_of(uri)
        if entry is None:
            return _unknown(request_id, uri, "skill")
        return _result(request_id, {"skill": entry})
    found = served.located(uri)
    if method == "resources/directory/read":
        listed = None if found is None else over_mcp.children(uri.rstrip("/"), found[1], found[2])
        if listed is None:
            return _unknown(request_id, uri, "directory")
        return _result(request_id, {"resources": listed})
    return await _read(request_id, uri, found)


async def _served(virtual, caller: Caller) -> over_mcp.Served:
    key = (virtual.pk, sessions.owner(caller.principal), caller.epochs.principals)
    cached = SERVED.get(key, caller.epochs.virtuals)
    if cached is not MISSING:
        return cached
    served = await database_sync_to_async(served_over_mcp)(virtual.skill_ids, caller.principal)
    SERVED.put(key, served, caller.epochs.virtuals)
    return served


def _listed(request_id, served: over_mcp.Served, cursor, stateless: bool) -> dict:
    try:
        start = 0 if cursor is None else int(base64.urlsafe_b64decode(str(cursor).encode()).decode())
    except (ValueError, binascii.Error, UnicodeDecodeError):
        start = -1
    if start < 0 or start > len(served.entries):
        return jsonrpc.error_message(request_id, INVALID_PARAMS, "That cursor is not one this server gave.")
    result = {"skills": served.entries[start : start + PAGE_SIZE]}
    if start + PAGE_SIZE < len(served.entries):
        result["nextCursor"] = base64.urlsafe_b64encode(str(start + PAGE_SIZE).encode()).decode()
    if stateless:  # 2026-07-28: the base protocol's list caching (SEP-2549); the list is the caller's own
        result |= {"ttlMs": LIST_TTL_MS, "cacheScope": "private"}
    return _result(request_id, result)


async def _read(request_id, uri: str, found) -> dict:
    if found is None or not any(item["path"] == found[2] for item in found[1]):
        return _unknown(request_id, uri, "resource")
    try:
        data = await database_sync_to_async(approved_bytes)(found[0], found[2])
    except ApiError as refused:
        return jsonrpc.error_message(request_id, jsonrpc.INTERNAL_ERROR, str(refused.detail))
    mime_type = over_mcp.mime_type(found[2])
    try:
        content = {"uri": uri, "mimeType": mime_type, "text": data.decode("utf-8")}
    except UnicodeDecodeError:
        content = {"uri": uri, "mimeType": mime_type, "blob": base64.b64encode(data).decode()}
    return _result(request_id, {"contents": [content]})


def _unknown(request_id, uri: str, what: str) -> dict:
    return jsonrpc.error_message(
        request_id, INVALID_PARAMS, f"No {what} this server serves you is at {uri[:300]}."
    )


def _result(request_id, result: dict) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}
