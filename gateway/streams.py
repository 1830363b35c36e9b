"""Server-sent event streams read as the HTML standard defines them: lines end in CRLF, LF or CR alone,
and an empty line ends an event. Every event stream the gateway carries goes through one `EventStream`:

- `filtering=True` (every GET stream, a resumption with `Last-Event-ID`, the SSE transport, a POST whose
  answers hold tool lists): events are kept whole until they end, tool lists in them cut to the caller's
  tools. An event over `limit` bytes is not kept: it is replaced by a JSON-RPC error for its id, so the
  gateway's memory stays bounded and the client is not left waiting.
- `filtering=False` (a POST answer with nothing to change): bytes go on as they arrive, unbuffered; only
  small events are read, to note which requests failed (for metrics).
- `inspect=True` (an A2A agent's stream): events are kept whole until they end and passed unchanged; the
  data of each is kept for the carrier to read (`drained`: the tasks it shows are claimed), and a
  `refusal` of the carrier's own words the error that ends the stream.

In both, an event that has not ended after `limit` bytes ends the stream (`cut`): the client gets the
JSON-RPC error for its request in an event of its own, and the carrier closes the upstream connection. So
an upstream that never ends an event makes the gateway hold at most `limit` bytes, and the client is not
left waiting.
"""

from __future__ import annotations

import json
import re

from accounts.principal import Principal
from gateway import jsonrpc, messages, tracing

SCAN_LIMIT = 64 * 1024  # events read for metrics only when at most this long
_LINE_END = re.compile(rb"\r\n|\r|\n")
_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,20})')


def events_data(body: bytes) -> list[bytes]:
    """The data of each event of a stream read whole (the one reader of every carrier that reads a whole
    stream: virtual servers' members, the SSE transport), as the standard says: CRLF, LF or CR
    end a line, an empty line ends an event, a `data` field loses one leading space and its lines join
    with LF; an event with empty data (a priming event) is none. An event the stream never ended still
    counts, as EventStream.close has it."""
    found: list[bytes] = []
    data: list[bytes] = []
    lines = _LINE_END.split(body)
    if lines and not lines[-1]:
        lines.pop()  # the last line ended: no line follows it
    for line in [*lines, b""]:
        if not line:
            if joined := b"\n".join(data):  # an event whose data is empty is not dispatched
                found.append(joined)
            data = []
        elif _field(line) == b"data":
            data.append(_value(line))
    return found


def sse_event(message) -> bytes:
    return b"event: message\ndata: " + json.dumps(message, separators=(",", ":")).encode() + b"\n\n"


class EventStream:
    """Feed it the server's chunks; it returns what may go to the client so far."""

    def __init__(
        self,
        principal: Principal,
        server_path: str,
        *,
        filtering: bool,
        limit: int,
        endpoint=None,
        rename=None,
        inspect: bool = False,
        refusal=None,
    ):
        self.principal, self.server_path = principal, server_path
        self.must_filter = filtering or endpoint is not None  # tool lists cut, the endpoint rewritten
        self.filtering, self.limit = self.must_filter or rename is not None or inspect, limit
        self.inspect, self.read = inspect, []  # the data of the whole events seen, until drained
        self.refusal = refusal  # (head of the event, why) -> the error event; None: a JSON-RPC error
        self.endpoint = endpoint  # SSE transport: rewrites an `endpoint` event's data (bytes -> bytes)
        # a virtual server's member (gateway/virtual/asks.py): renames messages and event ids
        self.rename = rename
        self.failed: set = set()
        self.outcomes: dict = {}  # (error.type, result) by id (gateway/tracing.py)
        self.rest = b""  # an unfinished line
        self.lines: list[bytes] = []  # the lines of the unfinished event
        self.size = 0
        self.oversized = False
        self.head = b""  # the first bytes of an oversized event, to find its id
        self.event_bytes = 0  # of the unfinished event, kept or not
        self.after_cr = False  # the last chunk ended with a CR: an LF beginning the next one is its
        self.cut = False  # an event went past `limit` without ending: the stream is over

    def feed(self, chunk: bytes) -> bytes:
        if self.cut:
            return b""
        out = [] if self.filtering else [chunk]
        data = self.rest + chunk
        if self.after_cr and data.startswith(b"\n"):
            data = data[1:]  # the LF of a CRLF split between chunks: the line already ended at its CR
        self.after_cr = False
        position = 0
        for end in _LINE_END.finditer(data):
            self._line(data[position : end.start()], out)
            position = end.end()
            # a CR at the end of the chunk ends its line now (an event that ends there goes on at once);
            # an LF the next chunk may begin with belongs to it
            self.after_cr = end.group() == b"\r" and position == len(data)
        self.rest = data[position:]
        if self.event_bytes + len(self.rest) > self.limit:
            self._overflow(self.rest)
            return self._cut(out)
        if len(self.rest) + self.size > self._keep_limit():
            self._overflow(self.rest)
            self.event_bytes += len(self.rest)
            self.rest = b""
        return b"".join(out)

    def _cut(self, out: list[bytes]) -> bytes:
        """The end of a stream whose event went past `limit`: what was due, then the error event (after a
        blank line that ends what of the event was passed on)."""
        self.cut = True
        why = f"did not end within the gateway's limit of {self.limit} bytes"
        refused = self._refused(self.head, why)
        self.lines, self.rest, self.oversized, self.head = [], b"", False, b""
        return b"".join(out) + (b"" if self.filtering else b"\n\n") + refused

    def close(self) -> bytes:
        if self.cut:
            return b""
        out: list[bytes] = []
        if self.rest:
            self._line(self.rest.rstrip(b"\r"), out)
            self.rest = b""
        if self.lines or self.oversized:
            self._line(b"", out)  # an event the server never ended still ends with the stream
        return b"".join(out)

    def _keep_limit(self) -> int:
        return self.limit if self.filtering else SCAN_LIMIT

    def _overflow(self, data: bytes) -> None:
        if not self.oversized:
            self.oversized = True
            self.head = b"\n".join(self.lines)[:4096] + data[:4096]
            self.lines = []

    def _line(self, line: bytes, out: list[bytes]) -> None:
        if line:
            self.event_bytes += len(line) + 1
            if not self.oversized:
                self.size += len(line) + 1
                self.lines.append(line)
                if self.size > self._keep_limit():
                    self._overflow(b"")
            return
        lines, oversized, head = self.lines, self.oversized, self.head
        self.lines, self.size, self.oversized, self.head, self.event_bytes = [], 0, False, b"", 0
        if oversized:
            if self.filtering:
                out.append(self._refused(head))
            return
        if lines:
            event = self._event(lines)
            if self.filtering:
                out.append(event + b"\n\n")

    def drained(self) -> list[bytes]:
        """The data of the whole events seen since the last call (inspect)."""
        read, self.read = self.read, []
        return read

    def _refused(self, head: bytes, why: str | None = None) -> bytes:
        """The error event that replaces an event the gateway cannot pass on (none without its id)."""
        if self.refusal is not None:
            return self.refusal(head, why or f"is larger than the gateway's limit of {self.limit} bytes")
        found = _ID.search(head)
        request_id = messages.decoded(found.group(1)) if found else messages.UNREADABLE
        if request_id is messages.UNREADABLE:
            return b""
        why = why or f"is larger than the gateway's limit of {self.limit} bytes"
        text = f"An event of the server {why}."
        return sse_event(jsonrpc.error_message(request_id, jsonrpc.INTERNAL_ERROR, text))

    def _event(self, lines: list[bytes]) -> bytes:
        event = b"\n".join(lines)
        data = b"\n".join(_value(line) for line in lines if line.startswith(b"data:") or line == b"data")
        if self.endpoint is not None and any(
            _field(line) == b"event" and _value(line) == b"endpoint" for line in lines
        ):
            return b"event: endpoint\ndata: " + self.endpoint(data)
        if self.rename is not None:
            lines = [self.rename.event_id(line) if _field(line) == b"id" else line for line in lines]
            event = b"\n".join(lines)
            if not self.must_filter and not self.rename.reads(data):
                return event  # nothing to rename in it, and no error for the metrics
        if self.inspect:
            if data:
                self.read.append(data)
            return event
        if not data:
            return event
        message = messages.decoded(data)
        if message is messages.UNREADABLE:  # never passed on unread where tool lists are cut
            return (
                self._refused(event[:4096], "could not be read to filter it").rstrip(b"\n")
                if self.filtering
                else event
            )
        self.failed |= messages.failed_ids(message)
        self.outcomes.update(tracing.outcomes(message))
        if not self.filtering:
            return event
        filtered = messages.filter_answer(message, self.principal, self.server_path, data)
        if self.rename is not None:
            filtered = self.rename(filtered)
        if filtered is message:
            return event
        others = [line for line in lines if _field(line) != b"data"]
        return b"\n".join([*others, b"data: " + json.dumps(filtered, separators=(",", ":")).encode()])


def _field(line: bytes) -> bytes:
    return line.partition(b":")[0]


def _value(line: bytes) -> bytes:
    value = line.partition(b":")[2]
    return value[1:] if value.startswith(b" ") else value
