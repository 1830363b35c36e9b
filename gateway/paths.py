"""Which server a gateway request names. The path is checked on the raw bytes the client sent before
anything is decoded: dot segments, empty segments and encoded separators (`%2e`, `%2f`, `%5c`) are
refused, so the server that is authorised is always the server that is reached (a proxy in front that
normalises differently cannot turn `/alpha/../beta/mcp` into a request for `/beta`). The server is the
longest registered path that prefixes what precedes the MCP endpoint (`/team/weather/mcp` is
`/team/weather` when it exists, else `/team`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.validators import PATH_PATTERN

# Streamable HTTP: `/<path>/mcp`; the SSE transport: the stream `/<path>/sse` and the messages it names,
# `/<path>/messages/?session_id=...`.
ENDPOINTS = ("mcp", "sse", "messages")
WELL_KNOWN = b"/.well-known/"
_ENCODED_SEPARATORS = re.compile(rb"%(2e|2f|5c)", re.IGNORECASE)


class PathRefused(ValueError):
    """A gateway path that could name more than one thing; answered 400, never routed."""


@dataclass(frozen=True)
class GatewayPath:
    candidates: tuple[str, ...]  # server paths it could name, longest first
    endpoint: str


@dataclass(frozen=True)
class AgentPath:
    candidates: tuple[str, ...]  # agent paths it could name, longest first
    rest: str  # what follows `/a2a`: "" (JSON-RPC), a REST binding's path, or the card's


def agent_path(raw_path: bytes) -> AgentPath | None:
    """An A2A agent's gateway path, `/<agent path>/a2a[/<rest>]` (the first `a2a` segment after the agent
    path ends it), or None. Raises PathRefused like gateway_path."""
    path = raw_path.split(b"?", 1)[0]
    segments = path.split(b"/")
    if b"a2a" not in segments[2:] or path.startswith(WELL_KNOWN):
        return None
    at = segments.index(b"a2a", 2)
    _refuse_encoded(path)
    rest = b"/".join(segments[at + 1 :])
    if any(segment in (b".", b"..") for segment in segments[at + 1 :]):
        raise PathRefused("'.' and '..' segments are not allowed in a gateway path.")
    return AgentPath(
        candidates=_candidates(b"/".join(segments[:at])), rest=("/" + rest.decode("latin-1")) if rest else ""
    )


def _refuse_encoded(path: bytes) -> None:
    if _ENCODED_SEPARATORS.search(path) or b"\\" in path:
        raise PathRefused("Encoded dots, slashes or backslashes are not allowed in a gateway path.")


def _candidates(head: bytes) -> tuple[str, ...]:
    """The registered paths `head` could name, longest first; PathRefused when it is no path at all."""
    try:
        text = head.decode("ascii")
    except UnicodeDecodeError:
        raise PathRefused("A gateway path is ASCII letters, digits, '-', '_' and '/'.") from None
    segments = text.split("/")[1:]
    if any(segment in ("", ".", "..") for segment in segments):
        raise PathRefused("Empty, '.' and '..' segments are not allowed in a gateway path.")
    if not PATH_PATTERN.match(text.lower()):
        raise PathRefused("A gateway path is lower-case letters, digits, '-' and '_' between '/'.")
    lowered = [segment.lower() for segment in segments]
    return tuple("/" + "/".join(lowered[:end]) for end in range(len(lowered), 0, -1))


def gateway_path(raw_path: bytes) -> GatewayPath | None:
    """The server paths a request path could name, or None when it is not a gateway path at all.

    Raises PathRefused for a gateway path that is ambiguous or malformed."""
    path = raw_path.split(b"?", 1)[0]
    if path.startswith(WELL_KNOWN):
        return None  # metadata documents about gateway URLs (RFC 9728) are Django's
    trimmed = path[:-1] if path.endswith(b"/") else path
    head, _, endpoint = trimmed.rpartition(b"/")
    if endpoint.decode("latin-1") not in ENDPOINTS or not head:
        return None
    _refuse_encoded(path)
    return GatewayPath(candidates=_candidates(head), endpoint=endpoint.decode("ascii"))
