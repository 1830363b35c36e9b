"""Where a virtual server's routed request goes (gateway/virtual/answers.py): the member that carries the
tool, prompt, resource or task it names, and the request in that member's own names (a fixed argument the
client sent is refused, the fixed ones added); an agent's tool or task is the agent bridge's
(gateway/virtual/agent_tools.py)."""

from __future__ import annotations

import json

from gateway import jsonrpc, sessions, tasks
from gateway.virtual import agent_tools
from gateway.virtual import lists as virtual_lists
from gateway.virtual.members import Caller
from virtual_servers.mapping import carried, fixed_of, resource_of

INVALID_PARAMS = -32602


async def member_message(virtual, caller: Caller, message: dict) -> dict:
    """{"member", "message"}: the member a routed request reaches and the request in its own names; or
    the JSON-RPC error that answers it."""
    method, request_id = message["method"], message["id"]
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    members = list(virtual.members)
    if method in jsonrpc.TASK_METHODS:  # resolved to the caller's task (gateway/tasks.py): its member's
        member = next((m for m in members if m.key == getattr(message, "member", None)), None)
        if member is None:
            return jsonrpc.error_message(request_id, tasks.INVALID_PARAMS, tasks.NOT_FOUND)
        own = virtual.tools_by_name.get(message.tool, (member, message.tool))[1]
        routed = tasks.ResolvedTask(message)
        routed.tool, routed.member = own, member.key  # judged at the member by the tool's own name
        return {"member": member, "message": routed}
    if method == "tools/call":
        found = _tool_behind(virtual, caller, params.get("name", ""))
        if found is None:  # neither tool discovery nor this session's lists named it yet: list now
            await virtual_lists.merged(virtual, caller, "tools/list")
            found = _tool_behind(virtual, caller, params.get("name", ""))
        if found is None:
            unknown = f"Unknown tool: {str(params.get('name'))[:200]}"
            return jsonrpc.error_message(request_id, INVALID_PARAMS, unknown)
        member, own = found
        fixed = fixed_of(member, own)
        arguments = params.get("arguments", {})
        if not isinstance(arguments, dict):
            return jsonrpc.error_message(request_id, INVALID_PARAMS, "arguments must be an object.")
        if sent := sorted(set(arguments) & set(fixed)):
            return jsonrpc.error_message(
                request_id,
                INVALID_PARAMS,
                f"{', '.join(sent)} is fixed by {virtual.path} and cannot be sent.",
            )
        routed = {**params, "name": own, "arguments": {**arguments, **fixed}}
    elif method == "prompts/get":
        if not isinstance(params.get("name"), str):
            return jsonrpc.error_message(request_id, INVALID_PARAMS, "prompts/get needs params.name.")
        member = await _prompt_behind(virtual, caller, params.get("name"))
        if member is None:
            if withheld := _prompt_withheld(virtual, caller.principal, params["name"]):
                return jsonrpc.error_message(request_id, jsonrpc.FORBIDDEN, withheld)
            unknown = f"Unknown prompt: {str(params.get('name'))[:200]}"
            return jsonrpc.error_message(request_id, INVALID_PARAMS, unknown)
        routed = params
    elif method == "completion/complete":
        ref = params.get("ref") if isinstance(params.get("ref"), dict) else {}
        if ref.get("type") == "ref/prompt":
            member = await _prompt_behind(virtual, caller, ref.get("name"))
            routed = params
        else:
            found = resource_of(ref["uri"], members) if isinstance(ref.get("uri"), str) else None
            member, own = found or (None, None)
            routed = {**params, "ref": {**ref, "uri": own}}
        if member is None:
            unknown = f"Nothing to complete for {json.dumps(ref)[:200]}"
            return jsonrpc.error_message(request_id, INVALID_PARAMS, unknown)
    else:
        found = resource_of(params.get("uri", ""), members) if isinstance(params.get("uri"), str) else None
        if found is None:
            unknown = f"Unknown resource: {str(params.get('uri'))[:200]}"
            return jsonrpc.error_message(request_id, INVALID_PARAMS, unknown)
        member, own = found
        routed = {**params, "uri": own}
    return {"member": member, "message": {**message, "params": routed}}


async def _prompt_behind(virtual, caller: Caller, name):
    """The member whose list shows a prompt of this name to the caller."""
    if not isinstance(name, str):
        return None
    if name not in caller.record.get("prompts", {}):
        await virtual_lists.merged(virtual, caller, "prompts/list")
    key = caller.record.get("prompts", {}).get(name, [None])[0]
    return next((member for member in virtual.members if member.key == key), None)


def _prompt_withheld(virtual, principal, name: str) -> str | None:
    """Why a prompt no list showed is refused, when a member would carry it but its server's operators
    have not approved it (core/tool_trust.py)."""
    for member in virtual.members:
        if carried(member.prompts, name) and (withheld := principal.prompt_refusal(member.server.path, name)):
            return withheld
    return None


def agent_tool(virtual, message: dict):
    """The agent tool a `tools/call` names (gateway/virtual/agent_tools.py), or None."""
    if message.get("method") != "tools/call" or not virtual.agents:
        return None
    return agent_tools.owner_of(virtual, (message.get("params") or {}).get("name"))


def agent_task(message: dict) -> bool:
    """Whether a task request is of a task an agent's tool made (gateway/virtual/agent_tools.py)."""
    return message.get("method") in jsonrpc.TASK_METHODS and str(getattr(message, "member", "")).startswith(
        agent_tools.AGENT_MEMBER
    )


def task_names(caller: Caller, member, message: dict, names):
    """The task names of a request routed to `member`: the request's resolved ones, with the call noted
    when it may create a task there (gateway/tasks.py); None when it has none."""
    named = tasks.noted(
        names or tasks.TaskNames(sessions.owner(caller.principal), caller.virtual_path), message, member.key
    )
    return named or None


def _tool_behind(virtual, caller: Caller, name: str):
    """(member, the tool's own name) behind a name clients see: the one this session's last list showed
    it for, else by the definition and the tools the registry knows each member offers."""
    listed = caller.record.get("tools", {}).get(name)
    if listed is not None:
        member = next((m for m in virtual.members if m.key == listed[0]), None)
        if member is not None:
            return member, listed[1]
    return virtual.tools_by_name.get(name)
