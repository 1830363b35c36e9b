"""Search-then-call on a virtual server whose definition asks for it (`tool_search`): its `tools/list`
shows two tools, `search_tools` and `call_tool`, so a host with hundreds of tools behind one URL spends
two tool definitions of its context, not hundreds.

- `search_tools({query, limit?})` ranks the tools the caller's own `tools/list` would show (the members'
  lists cut by the caller's rights at the virtual path and on each member's server, pins and blocks
  applied: gateway/virtual/lists.py) by meaning: each tool's vector from the registry's index when the
  virtual server shows it as its server describes it, else its text as shown embedded once per process.
  It is judged as the `tools/list` it is a search of.
- `call_tool({name, arguments})` is the direct call: the message is rewritten before anything judges it
  (`unwrapped`, from gateway/app.py), so it meets the same checks, limits, refusals and error codes as a
  `tools/call` of that tool by name.

Both rewrites happen after the request's own headers were compared with its body
(gateway/headers.protocol_disagreement), so a client's `Mcp-Name: call_tool` stays consistent."""

from __future__ import annotations

import json

from channels.db import database_sync_to_async

from core.embeddings import cosine, tool_words, vectors_kept
from gateway import jsonrpc
from gateway.virtual import agent_tools
from gateway.virtual import lists as virtual_lists
from gateway.virtual.members import Caller
from servers.models import Tool

SEARCH_TOOLS, CALL_TOOL = "search_tools", "call_tool"
SEARCHED = "io.modelcontextprotocol.registry/search"  # the search a rewritten `tools/list` carries
DEFAULT_LIMIT, MAX_LIMIT = 10, 50
QUERY_MAX_LENGTH = 1000
INVALID_PARAMS = -32602

TOOLS = [
    {
        "name": SEARCH_TOOLS,
        "description": (
            "Find the tools of this server for a task, best first: give what you want to do in a few words. "
            "Each result has the tool's name, description and input schema; call one with call_tool."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "what you want to do",
                    "maxLength": QUERY_MAX_LENGTH,
                },
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
            },
            "required": ["query"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": CALL_TOOL,
        "description": "Call a tool search_tools found, by its name, with its arguments.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "the tool's name, as search_tools gave it"},
                "arguments": {"type": "object", "description": "the tool's arguments, by its input schema"},
            },
            "required": ["name"],
        },
    },
]


def unwrapper(virtual):
    """The rewrite of a request body for this target: for a virtual server in the search mode, else None."""
    return unwrapped if virtual is not None and virtual.tool_search else None


def unwrapped(payload):
    """A request body (a message or a batch) with `call_tool` as the `tools/call` it asks for and
    `search_tools` as the search of `tools/list` it is."""
    return [_one(item) for item in payload] if isinstance(payload, list) else _one(payload)


def _one(message):
    if not isinstance(message, dict) or message.get("method") != jsonrpc.TOOLS_CALL:
        return message
    params = message.get("params")
    if not isinstance(params, dict) or params.get("name") not in (SEARCH_TOOLS, CALL_TOOL):
        return message
    arguments = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
    meta = {"_meta": params["_meta"]} if "_meta" in params else {}
    if params["name"] == CALL_TOOL and isinstance(arguments.get("name"), str):
        called = {"name": arguments["name"], "arguments": arguments.get("arguments", {}), **meta}
        return {**message, "params": called}
    if params["name"] == CALL_TOOL:
        asked = {"refused": "call_tool needs arguments.name, the name of a tool search_tools found."}
    else:
        asked = {"query": arguments.get("query"), "limit": arguments.get("limit", DEFAULT_LIMIT)}
    return {**message, "method": jsonrpc.TOOLS_LIST, "params": {SEARCHED: asked, **meta}}


def concerns(message: dict) -> bool:
    params = message.get("params")
    return message.get("method") == jsonrpc.TOOLS_LIST and isinstance(params, dict) and SEARCHED in params


async def answered(virtual, caller: Caller, message: dict) -> dict:
    """The answer to a search (a rewritten `search_tools` call): a `tools/call` result whose structured
    content is the best tools for the query, as the caller's `tools/list` shows them."""
    request_id, asked = message["id"], message["params"][SEARCHED]
    if "refused" in asked:
        return jsonrpc.error_message(request_id, INVALID_PARAMS, asked["refused"])
    query, limit = asked.get("query"), asked.get("limit")
    if not isinstance(query, str) or not query.strip() or len(query) > QUERY_MAX_LENGTH:
        problem = f"search_tools needs a query: text of 1 to {QUERY_MAX_LENGTH} characters."
        return jsonrpc.error_message(request_id, INVALID_PARAMS, problem)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        return jsonrpc.error_message(
            request_id, INVALID_PARAMS, f"limit is a whole number of 1 to {MAX_LIMIT}."
        )
    shown = await virtual_lists.merged(virtual, caller, jsonrpc.TOOLS_LIST)
    shown += await agent_tools.listed(virtual, caller)
    found = await database_sync_to_async(ranked)(virtual, caller.record.get("tools", {}), shown, query, limit)
    text = json.dumps({"tools": found}, ensure_ascii=False)
    result = {"content": [{"type": "text", "text": text}], "structuredContent": {"tools": found}}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def ranked(virtual, names: dict, shown: list[dict], query: str, limit: int) -> list[dict]:
    """The `limit` tools of `shown` nearest to `query`, each as shown with its `score` (cosine similarity).
    `names`: name clients see → (member key, the tool's own name), as the list recorded them."""
    servers = {member.key: member.server.pk for member in virtual.members}
    behind = {
        name: (servers[key], own)
        for name, (key, own) in names.items()
        if key in servers and isinstance(own, str)
    }
    stored = {
        (server_id, name): (description, vector)
        for server_id, name, description, vector in Tool.objects.filter(
            server_id__in={server for server, _ in behind.values()},
            name__in={own for _, own in behind.values()},
            embedding__isnull=False,
        ).values_list("server_id", "name", "description", "embedding")
    }
    vectors, texts = {}, {}
    for tool in shown:
        kept = stored.get(behind.get(tool["name"], (None, None)))
        if kept is not None and kept[0] == tool.get("description", ""):
            vectors[tool["name"]] = list(kept[1])  # as the registry indexed it
        else:
            texts[tool["name"]] = tool_words(tool["name"], tool.get("description") or "")
    order = list(texts)
    embedded = vectors_kept([query, *(texts[name] for name in order)])
    vectors.update(zip(order, embedded[1:], strict=True))
    scored = sorted(
        ((cosine(embedded[0], vectors[tool["name"]]), tool) for tool in shown),
        key=lambda pair: (-pair[0], pair[1]["name"]),
    )
    return [{**tool, "score": round(score, 4)} for score, tool in scored[:limit]]
