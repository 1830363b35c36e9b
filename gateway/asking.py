"""Asking the caller's user for a credential inside the MCP conversation (DESIGN §15), when a server needs
each user's own credential and the caller has none usable (connections/resolver.py):

- 2026-07-28: a `tools/call`, `prompts/get` or `resources/read` gets the `input_required` result carrying
  a URL-mode elicitation; the client retries the request once the user is done;
- 2025-11-25: every request gets the URL-elicitation-required error (-32042) with the URL;
- earlier revisions: a `tools/call` gets a tool error whose text carries the URL, any other request the
  -32042 error, whose message carries it too.

The URL is the registry's connections page for the server, which needs the user's session: a link pasted
in a chat cannot connect anybody. Callers who cannot connect (service accounts) get 403."""

from __future__ import annotations

import secrets

import mcp_types
from mcp.shared.exceptions import UrlElicitationRequiredError

from core.errors import ErrorCode
from core.public_url import base_url_of_scope
from gateway import headers
from gateway.routing import Refusal

INPUT_REQUIRED_SINCE = "2026-07-28"
URL_ELICITATION_SINCE = "2025-11-25"
INTERACTIVE = frozenset({"tools/call", "prompts/get", "resources/read"})


def answer(scope, checked, missing) -> tuple[int, object]:
    """(HTTP status, JSON-RPC answer) for a POST whose caller must connect first; Refusal when they
    cannot."""
    if missing.connect_path is None:
        raise Refusal(403, ErrorCode.PERMISSION_DENIED, str(missing))
    url = f"{base_url_of_scope(scope)}{missing.connect_path}"
    requests = [message for message in checked.forward if "id" in message and "method" in message]
    answers = [_answer_one(message, _version(scope, message), url, str(missing)) for message in requests]
    answers += checked.denied  # a batch's requests the caller may not send are answered as ever
    if not answers:
        return 202, None
    return 200, answers if checked.batch else answers[0]


def refusal(scope, missing) -> Refusal:
    """A request that carries no JSON-RPC message (a GET stream, a DELETE): 403 naming where to connect."""
    if missing.connect_path is None:
        return Refusal(403, ErrorCode.PERMISSION_DENIED, str(missing))
    url = f"{base_url_of_scope(scope)}{missing.connect_path}"
    return Refusal(403, ErrorCode.CONNECTION_REQUIRED, f"{missing} Connect at {url}")


def versions(scope, checked) -> list[str]:
    """The protocol revision of each message the body forwards, in order."""
    return [_version(scope, message) for message in checked.forward]


def _version(scope, message: dict) -> str:
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    if message.get("method") == "initialize" and isinstance(params.get("protocolVersion"), str):
        return params["protocolVersion"]
    stated = headers.stated_version(message) or headers.first(scope, b"mcp-protocol-version")
    return stated if isinstance(stated, str) else ""


def _answer_one(message: dict, version: str, url: str, why: str) -> dict:
    method, request_id = message.get("method"), message.get("id")
    elicitation = mcp_types.ElicitRequestURLParams(
        message=why, url=url, elicitation_id=secrets.token_urlsafe(12)
    )
    if version >= INPUT_REQUIRED_SINCE and method in INTERACTIVE:
        result = mcp_types.InputRequiredResult(
            input_requests={
                "connect": mcp_types.ElicitRequest(
                    params=mcp_types.ElicitRequestURLParams(message=why, url=url)
                )
            }
        )
        return {"jsonrpc": "2.0", "id": request_id, "result": _wire(result)}
    if version < URL_ELICITATION_SINCE and method == "tools/call":
        result = {"content": [{"type": "text", "text": f"{why} Connect at {url}"}], "isError": True}
        return {"jsonrpc": "2.0", "id": request_id, "result": result}
    error = UrlElicitationRequiredError([elicitation], message=f"{why} Connect at {url}").error
    return {"jsonrpc": "2.0", "id": request_id, "error": _wire(error)}


def _wire(model) -> dict:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")
