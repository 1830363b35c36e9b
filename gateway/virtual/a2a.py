"""A virtual server published as an A2A agent (its definition's `a2a`), at `/<path>/a2a`: its tools are the
agent's skills, so an A2A client reaches MCP servers through the same URL and the same judge.

- The card (`/<path>/a2a/.well-known/agent-card.json`, v1.0 with its v0.3 fields) has one `AgentSkill` per
  tool the caller's own `tools/list` would show: `id` the tool's name as clients see it, its description,
  the virtual server as a tag, the description's first sentence as an example, and the OAuth scope a
  token needs (`mcp`) in its `securityRequirements`. A2A has no per-skill input schema yet: the tools'
  schemas are in an `AgentExtension` of the registry's own URI (TOOL_SCHEMAS).
- A message naming a skill (a data part `{"skill": "<tool>", "arguments": {...}}`, or a text part whose
  first word is the skill, for simple clients) is a `tools/call` of that tool, judged and answered
  exactly as one through the virtual server; its answer is a task, the result its artifact (text parts,
  and structured content as a data part), or a failed one when the tool answered `isError`. `SendMessage`
  answers at once or with a `WORKING` task for a slow tool, `SendStreamingMessage` on an event stream,
  and `GetTask`, `SubscribeToTask` and `CancelTask` read, follow and stop a slow tool's task
  (gateway/virtual/a2a_tasks.py).
- Both bindings: JSON-RPC at the URL, and HTTP+JSON under it (`POST .../a2a/message:send`,
  `GET .../a2a/tasks/{id}`, `POST .../a2a/tasks/{id}:cancel`; v0.3's under `/v1/`), read by the
  gateway's one reader of A2A calls (gateway/a2a/calls.py).
- Every refusal (rights, pins, blocks, quarantine, limits, a missing credential) is the error the
  binding takes, before anything reaches a member; a tool the caller cannot see is "not found"."""

from __future__ import annotations

from channels.db import database_sync_to_async
from django.conf import settings

from agents.cards import SECURITY_SCHEME
from core.epochs import MISSING
from core.errors import ErrorCode
from core.public_url import base_url_of_scope
from core.targets import Target, TargetKind
from core.untrusted import InputRejected, json_loads
from gateway import decision, forwarding, headers, jsonrpc, quotas
from gateway.a2a import calls
from gateway.epochs import request_epochs
from gateway.front import Front, read_body
from gateway.paths import AgentPath, agent_path
from gateway.routing import NotOurs, Refusal, caller, challenge
from gateway.virtual import a2a_tasks, answers
from gateway.virtual import lists as virtual_lists
from virtual_servers.selectors import virtual_for_gateway, virtual_for_gateway_cached

CARD_PATH = "/.well-known/agent-card.json"
TOOL_SCHEMAS = "https://modelcontextprotocol.io/registry/a2a/tool-schemas/v1"


class VirtualAgentFace(Front):
    """Serves `/<path>/a2a` of a virtual server published as an A2A agent; hands every other path (an
    agent's, or a page's) to `fallback` (gateway/a2a/app.py AgentGateway)."""

    def target(self, raw_path: bytes):
        return agent_path(raw_path)

    def methods(self, target) -> tuple[str, ...]:
        return ("GET", "POST")

    def challenge(self, scope, target, refusal) -> dict[str, str]:
        if refusal.status == 401 or refusal.code == ErrorCode.INSUFFICIENT_SCOPE:
            return {
                "WWW-Authenticate": challenge(
                    base_url_of_scope(scope), target.candidates[0], "a2a", refusal.code
                )
            }
        return {}

    async def serve(self, scope, receive, send, target: AgentPath) -> None:
        epochs = await request_epochs()
        virtual = virtual_for_gateway_cached(target.candidates, epochs.virtuals)
        if virtual is MISSING:
            virtual = await database_sync_to_async(virtual_for_gateway)(target.candidates, epochs.virtuals)
        if virtual is None or not virtual.a2a or not virtual.is_enabled:
            raise NotOurs
        if problem := headers.origin_problem(scope):
            raise Refusal(403, ErrorCode.PERMISSION_DENIED, problem)
        authorization, cookie = headers.first(scope, b"authorization"), headers.first(scope, b"cookie")
        principal = await database_sync_to_async(caller)(authorization, cookie, epochs.principals)
        rules = await quotas.rules(epochs.limits)
        reached = Target(TargetKind.VIRTUAL_SERVER, virtual.path)
        await decision.admit(principal, reached, rules, audience=target.candidates[0])
        method, url = scope["method"], f"{base_url_of_scope(scope)}{virtual.path}/a2a"
        if target.rest == CARD_PATH:
            if method != "GET":
                raise Refusal(
                    405, ErrorCode.METHOD_NOT_ALLOWED, "The card is read with GET.", {"Allow": "GET"}
                )
            tools = await virtual_lists.merged(
                virtual, await answers.caller_for(virtual, principal, epochs), "tools/list"
            )
            return await forwarding.json_answer(send, 200, card(virtual, url, tools))
        raw = await read_body(receive, settings.MAX_REQUEST_BODY_BYTES) if method == "POST" else b""
        try:
            body = json_loads(raw) if raw else {}
        except InputRejected as rejected:
            code = jsonrpc.PARSE_ERROR if rejected.unparsable else jsonrpc.INVALID_REQUEST
            return await forwarding.json_answer(send, 400, jsonrpc.error_message(None, code, str(rejected)))
        if target.rest:  # HTTP+JSON: the operation by its path (v0.3's under /v1/)
            query = scope.get("query_string", b"").decode("latin-1")
            call = calls.from_rest(method, target.rest, query, body)
            if call is None:
                raise Refusal(404, ErrorCode.NOT_FOUND, "No A2A operation has this path.")
        else:
            if method != "POST":
                raise Refusal(
                    405, ErrorCode.METHOD_NOT_ALLOWED, "A2A JSON-RPC requests are POSTed.", {"Allow": "POST"}
                )
            if invalid := calls.not_jsonrpc(body):
                return await forwarding.json_answer(
                    send, 400, jsonrpc.error_message(None, jsonrpc.INVALID_REQUEST, invalid)
                )
            call = calls.from_jsonrpc(body)
        return await a2a_tasks.handled(receive, send, virtual, principal, epochs, call)


def card(virtual, url: str, tools: list[dict]) -> dict:
    """The agent card of a virtual server, its skills the tools as `tools/list` shows them to the caller."""
    skills = []
    for tool in tools:
        description = str(tool.get("description") or tool["name"])
        skill = {
            "id": tool["name"],
            "name": str(tool.get("title") or tool["name"]),
            "description": description,
            "tags": [virtual.path.strip("/")],
            "examples": [description.split(". ")[0][:200]],
            "inputModes": ["application/json", "text/plain"],
            "outputModes": ["application/json", "text/plain"],
            "securityRequirements": [{"schemes": {SECURITY_SCHEME: {"list": ["mcp"]}}}],
        }
        skills.append(skill)
    schemas = {tool["name"]: tool.get("inputSchema", {"type": "object"}) for tool in tools}
    interfaces = [
        {"url": url, "protocolBinding": binding, "protocolVersion": version}
        for binding in ("JSONRPC", "HTTP+JSON")
        for version in ("1.0", "0.3")
    ]
    return {
        "name": virtual.name,
        "description": virtual.description or f"The tools of {virtual.name}.",
        "version": "1.0.0",
        "supportedInterfaces": interfaces,
        "url": url,
        "preferredTransport": "JSONRPC",
        "protocolVersion": "0.3.0",
        "capabilities": {
            "streaming": True,
            "extensions": [
                {
                    "uri": TOOL_SCHEMAS,
                    "description": "The input schema of each skill (an MCP tool), by skill id.",
                    "required": False,
                    "params": {"schemas": schemas},
                }
            ],
        },
        "defaultInputModes": ["application/json", "text/plain"],
        "defaultOutputModes": ["application/json", "text/plain"],
        "skills": skills,
        "securitySchemes": {SECURITY_SCHEME: {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
        "securityRequirements": [{"schemes": {SECURITY_SCHEME: {"list": []}}}],
    }
