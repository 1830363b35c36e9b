"""Messages a virtual server's members send its clients, and the clients' answers back:

- a member's request to the client (sampling, elicitation, roots, ping) reaches the client under an id
  of the gateway's own, `registry-virtual:<member key>:<its id as JSON>`, so ids of two members never
  collide, and the client's answer to that id is sent to that member under its own id (`answered`);
- a member's notice about a resource names the resource as clients see it (virtual_servers/mapping.py);
- an event's id becomes `registry-virtual:<member key>:<its id>`, so a client resuming a stream with
  `Last-Event-ID` reaches the member that sent it (`resumed`);
- everything else (progress, log messages, list changes, results) goes on as it is.

A message is renamed by `Outgoing`, one per member stream (a POST answer's or a GET stream's)."""

from __future__ import annotations

import json

from gateway.deferred import STATELESS_RESULT
from virtual_servers.mapping import uri_seen, uris_prefixed

ASKED = "registry-virtual:"
RESOURCE_NOTICES = frozenset({"notifications/resources/updated"})


class Outgoing:
    """Renames what one member sends, as clients must see it; for a 2026-07-28 client (`stateless`), a
    result also says it is complete and private to the caller, as that revision wants of every result."""

    def __init__(self, member, members, *, stateless: bool = False):
        self.member, self.prefixed, self.stateless = member, uris_prefixed(members), stateless

    def reads(self, data: bytes) -> bool:
        """Whether an event's data must be read: it may hold a request or notice to rename, an error the
        metrics count, or (2026-07-28) a result to mark."""
        return self.stateless or b'"method"' in data or b'"error"' in data

    def event_id(self, line: bytes) -> bytes:
        own = line.partition(b":")[2].lstrip(b" ")
        return b"id: " + f"{ASKED}{self.member.key}:".encode() + own

    def __call__(self, message):
        if isinstance(message, list):
            return [self(item) for item in message]
        if not isinstance(message, dict):
            return message
        if self.stateless and isinstance(message.get("result"), dict) and "method" not in message:
            return {**message, "result": {**STATELESS_RESULT, **message["result"]}}
        if not isinstance(message.get("method"), str):
            return message
        if "id" in message:
            own = json.dumps(message["id"], separators=(",", ":"))
            return {**message, "id": f"{ASKED}{self.member.key}:{own}"}
        params = message.get("params")
        if message["method"] in RESOURCE_NOTICES and isinstance(params, dict) and self.prefixed:
            if isinstance(params.get("uri"), str):
                return {**message, "params": {**params, "uri": uri_seen(params["uri"], self.member, True)}}
        return message


def _member_of(named: str, members) -> tuple[object, str] | None:
    """(the member, the rest) of `registry-virtual:<member key>:<rest>`."""
    if not named.startswith(ASKED):
        return None
    key, separator, rest = named[len(ASKED) :].partition(":")
    member = next((member for member in members if member.key == key), None)
    return (member, rest) if member is not None and separator else None


def resumed(last_event_id: str, members) -> tuple[object, str] | None:
    """(the member, its own event id) of a `Last-Event-ID` a member's renamed stream gave."""
    return _member_of(last_event_id, members)


def answered(message: dict, members) -> tuple[object, dict] | None:
    """(the member, the answer under its own id) of a client's answer to a member's request; None for an
    answer to nothing a member asked."""
    asked = message.get("id")
    found = _member_of(asked, members) if isinstance(asked, str) else None
    if found is None:
        return None
    member, own = found
    try:
        own_id = json.loads(own)
    except ValueError:
        return None
    if not isinstance(own_id, (str, int)) or isinstance(own_id, bool):
        return None
    return member, {**message, "id": own_id}
