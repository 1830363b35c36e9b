"""What the gateway does with the messages of a request and its answer: every message of a POST (a batch
included) judged by the one rule (`gateway/jsonrpc.allowed`); a denied request answered by the gateway
with a JSON-RPC error and never forwarded; and every tool list in an answer cut to the tools the caller
may call and an operator approved as they are shown (pinned tools), whatever carries it (a JSON answer, a
POST's event stream, a GET stream, a resumption)."""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from accounts.principal import Principal
from core.targets import Target, TargetKind
from gateway import decision, jsonrpc, pins_seen
from servers.pins import definition_of, digest_of


@dataclass
class Checked:
    """A POST body after the checks: what to forward, what the gateway answers itself, and the ids
    whose results are tool lists to filter."""

    batch: bool
    forward: list = field(default_factory=list)
    denied: list[dict] = field(default_factory=list)
    lists: set = field(default_factory=set)  # ids of tools/list and prompts/list requests
    calls: list[tuple[str, str | None]] = field(default_factory=list)  # (method, tool) of forwarded requests
    call_ids: list = field(default_factory=list)  # their ids (as `id_key` gives them), in the same order
    client_name: str = ""  # clientInfo.name of a forwarded `initialize` (or a 2026-07-28 request's _meta)
    dropped: int = 0  # denied notifications: nobody to answer, not forwarded
    opens_session: bool = False  # an `initialize` is forwarded: the answer may name a new session
    stand_ins: int = 0  # SSE transport: denied requests forwarded as a method no server has
    trace: object = None  # the requests' spans when tracing is on (gateway/tracing.py)
    tasks: object = None  # what the answers' task ids are called (gateway/tasks.TaskNames), when any
    resolved: bool = False  # a task request's id was resolved: the body goes on as rewritten
    received_at: float = field(default_factory=time.perf_counter)  # when the gateway had the body

    @property
    def untouched(self) -> bool:
        """Whether the server may receive the body exactly as the client sent it."""
        return not self.denied and not self.dropped and not self.stand_ins and not self.resolved

    @property
    def rewrites(self) -> bool:
        """Whether the answer must be read and changed on its way (tool lists cut, denials added, the
        tasks a call may create named by the gateway)."""
        return bool(self.lists or self.denied or self.tasks)

    def forward_body(self, raw: bytes) -> bytes:
        if self.untouched and self.trace is None:
            return raw
        payload = self.forward if self.batch else self.forward[0]
        return json.dumps(payload, separators=(",", ":")).encode()


def _client_name(message: jsonrpc.Message) -> str:
    params = message.raw.get("params")
    if not isinstance(params, dict):
        return ""
    info = params.get("clientInfo")
    if info is None and isinstance(params.get("_meta"), dict):  # 2026-07-28: clientInfo rides in _meta
        info = params["_meta"].get("io.modelcontextprotocol/clientInfo")
    name = info.get("name") if isinstance(info, dict) else None
    return name if isinstance(name, str) else ""


def check_body(payload, principal: Principal, server_path: str) -> Checked:
    """Sort each message of a decoded POST body into forwarded or denied."""
    return check_messages(*jsonrpc.read(payload), principal, server_path)


def check_messages(batch: bool, messages, principal: Principal, server_path: str) -> Checked:
    """Sort each message read from a POST body (`jsonrpc.read`) into forwarded or denied, each by the one
    decision's rule (gateway/decision.refusal; a server and a virtual server share it)."""
    checked = Checked(batch=batch)
    target = Target(TargetKind.SERVER, server_path)
    for message in messages:
        refused = decision.refusal(principal, target, message)
        if refused is None:
            checked.forward.append(message.raw)
            if message.kind != "request":
                continue
            checked.calls.append((message.method, message.tool))
            checked.call_ids.append(jsonrpc.id_key(message.raw["id"]))
            if message.method in (jsonrpc.TOOLS_LIST, jsonrpc.PROMPTS_LIST):
                checked.lists.add(jsonrpc.id_key(message.raw["id"]))
            checked.opens_session |= message.method == jsonrpc.INITIALIZE
            checked.client_name = checked.client_name or _client_name(message)
        elif not message.has_id:  # a denied notification has nobody to answer
            checked.dropped += 1
        else:
            code = jsonrpc.INVALID_REQUEST if message.kind == "invalid" else jsonrpc.FORBIDDEN
            checked.denied.append(jsonrpc.error_message(message.raw["id"], code, refused))
    return checked


def filter_answer(message, principal: Principal, server_path: str, raw: bytes | None = None):
    """A decoded answer with every tool list cut to the tools the caller may call. Every result that
    carries `tools` is cut, whichever request it answers: a replayed or foreign answer is never trusted.
    `raw`, the answer's bytes, lets an unchanged list skip the digests of its tools (`pinned_names`)."""
    if isinstance(message, list):
        filtered = [filter_answer(item, principal, server_path) for item in message]
        return message if all(a is b for a, b in zip(filtered, message, strict=True)) else filtered
    if not isinstance(message, dict):
        return message
    result = message.get("result")
    if not isinstance(result, dict):
        return message
    if isinstance(result.get("prompts"), list):
        return _prompts_filtered(message, result, principal, server_path, raw)
    if not isinstance(result.get("tools"), list):
        return message
    listed = [
        tool for tool in result["tools"] if isinstance(tool, dict) and isinstance(tool.get("name"), str)
    ]
    trust = principal.trust.get(server_path)
    if trust is not None and trust.pinned is not None:
        admitted = pinned_names(trust, server_path, listed, raw)
        listed = [tool for tool in listed if tool["name"] in admitted]
    tools = [tool for tool in listed if principal.allows_mcp(server_path, jsonrpc.TOOLS_CALL, tool["name"])]
    return {**message, "result": {**result, "tools": tools}}


def _prompts_filtered(message: dict, result: dict, principal: Principal, server_path: str, raw):
    """A prompt list cut to the prompts pinned as they are shown (nothing else decides over prompts)."""
    trust = principal.trust.get(server_path)
    if trust is None or trust.prompts is None:
        return message
    listed = [
        item for item in result["prompts"] if isinstance(item, dict) and isinstance(item.get("name"), str)
    ]
    admitted = pinned_names(trust, server_path, listed, raw, subject="prompt")
    return {**message, "result": {**result, "prompts": [item for item in listed if item["name"] in admitted]}}


# (server path, subject, digest of an answer's bytes) -> (the ToolTrust it was checked against, the names
# it admitted)
_ADMITTED: OrderedDict[tuple[str, str, bytes], tuple[object, frozenset[str]]] = OrderedDict()
ADMITTED_REMEMBERED = 1024


def pinned_names(
    trust, server_path: str, items: list[dict], raw: bytes | None, subject: str = "tool"
) -> frozenset[str]:
    """The names of `items` (tools, or prompts) pinned as they are shown. An answer seen before, byte for
    byte, under the same pins is not digested again: a steady server's lists cost one hash of their bytes.
    Virtual servers check their members' lists with it too (gateway/virtual/lists.py)."""
    key = (server_path, subject, hashlib.blake2b(raw, digest_size=16).digest()) if raw is not None else None
    if key is not None and (seen := _ADMITTED.get(key)) is not None and seen[0] is trust:
        return seen[1]
    admitted = frozenset(
        item["name"] for item in items if _pinned_as_shown(trust, server_path, item, subject)
    )
    if key is not None:
        _ADMITTED[key] = (trust, admitted)
        if len(_ADMITTED) > ADMITTED_REMEMBERED:
            _ADMITTED.popitem(last=False)
    return admitted


def _pinned_as_shown(trust, server_path: str, item: dict, subject: str) -> bool:
    """Whether a listed tool (or prompt) is the one an operator approved (servers/pins.py); one that is
    not (new, or changed since) is left out and reported, to be held as a pending change
    (gateway/pins_seen.py)."""
    if subject == "tool" and item["name"] in trust.blocked:
        return False
    digest = digest_of(definition_of(item, subject))
    if trust.admits(item["name"], digest, subject):
        return True
    held = item["name"] in (trust.held if subject == "tool" else trust.prompts_held)
    pins_seen.report(server_path, item, digest, subject, held=held)
    return False


def failed_ids(message) -> set:
    """The ids of the error answers in a decoded answer (or batch of answers)."""
    answers = message if isinstance(message, list) else [message]
    return {jsonrpc.id_key(a.get("id")) for a in answers if isinstance(a, dict) and "error" in a}


UNREADABLE = object()


class Unfilterable(ValueError):
    """An answer that must be filtered but cannot be read (not JSON, or nested too deep)."""


def decoded(raw: bytes):
    """A server's JSON, or UNREADABLE (not JSON, or nested beyond what Python's parser can follow)."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return UNREADABLE


def merged_json(
    body: bytes, denied: list[dict], principal: Principal, server_path: str, rename=None
) -> tuple[bytes, set]:
    """A JSON answer of the server, tool lists filtered, renamed for a virtual server's client
    (gateway/virtual/asks.py) and the gateway's denials added; and the ids the server answered with an
    error."""
    if not body.strip() and not denied:
        return body, set()  # nothing to filter
    answer = decoded(body) if body.strip() else []
    if answer is UNREADABLE:
        raise Unfilterable  # a tool list the gateway cannot read is never passed on unread
    failed = failed_ids(answer)
    filtered = filter_answer(answer, principal, server_path, body)
    if rename is not None:
        filtered = rename(filtered)
    if denied:
        filtered = [*(filtered if isinstance(filtered, list) else [filtered]), *denied]
    if filtered is answer:
        return body, failed
    return json.dumps(filtered, separators=(",", ":")).encode(), failed


def unanswered(checked: Checked, text: str) -> list[dict]:
    """An error for every forwarded request of a POST whose answer cannot be passed on, and its denials."""
    errors = [
        jsonrpc.error_message(json.loads(key), jsonrpc.INTERNAL_ERROR, text) for key in checked.call_ids
    ]
    return errors + checked.denied


DENIED_METHOD = "gateway/denied"


def stand_in_denied(checked: Checked) -> None:
    """SSE transport: answers travel on a stream another process may hold, so each denied request goes
    to the server as a method no server implements; its "method not found" answers the same id there,
    so the client is not left waiting."""
    checked.forward += [{"jsonrpc": "2.0", "id": d["id"], "method": DENIED_METHOD} for d in checked.denied]
    checked.stand_ins, checked.denied = len(checked.denied), []
