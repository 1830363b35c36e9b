"""The one rule for input from outside, used by every surface of both services.

Text PostgreSQL cannot store (NUL, and lone UTF-16 surrogates, which no UTF-8 encoding holds) is refused
with the field named, before anything reaches a query; JSON is parsed with a depth limit, so a body
nested thousands of levels deep is a 400, not a RecursionError in the parser, a serializer or psycopg.
The Django middleware (`registry_site.middleware.UntrustedInputMiddleware`) applies it to paths, query
parameters, form fields and cookies; the DRF parser (`core.parsers`) and every hand-parsed body
(`/validate`'s `X-Body`, the metrics service) use `json_loads`.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from django.conf import settings

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# Characters no one-line value (a name, an identifier, a command's argument, a URL) may hold: C0 and C1
# controls, line and paragraph separators, and the bidirectional overrides that make text read other
# than it runs. Multi-line text (a description) may hold tabs and line breaks.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_CONTROL_MULTILINE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


class InputRejected(ValueError):
    """Input that is refused as a whole; `field` names where (a JSON path, a parameter, `path`)."""

    def __init__(self, field: str, message: str, *, unparsable: bool = False):
        super().__init__(f"{field}: {message}" if field else message)
        self.field, self.message, self.unparsable = field, message, unparsable


def unstorable_reason(value: str) -> str | None:
    """Why PostgreSQL could not store `value`, or None when it can."""
    match = _UNSTORABLE.search(value)
    if match is None:
        return None
    if match.group() == "\x00":
        return "NUL characters are not allowed."
    return "Text must be valid Unicode (a lone surrogate was found)."


def control_character_reason(value: str, *, multiline: bool = False) -> str | None:
    """Why `value` cannot be a one-line value (or, with `multiline`, a text), or None when it can."""
    match = (_CONTROL_MULTILINE if multiline else _CONTROL).search(value)
    if match is None:
        return None
    return f"Control characters are not allowed (found {match.group().encode('unicode_escape').decode()})."


def printable(value: str) -> str:
    """`value` with unstorable characters written as escapes (`\\x00`, `\\ud800`): safe to name in an
    error, which must itself be storable and encodable."""
    return _UNSTORABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), value)


def check_text(value: str, field: str) -> str:
    """`value` unchanged, or InputRejected naming `field`."""
    reason = unstorable_reason(value)
    if reason is not None:
        raise InputRejected(field, reason)
    return value


def check_tree(value: Any, field: str = "", *, max_depth: int | None = None, text: bool = True) -> Any:
    """`value` (decoded JSON) unchanged, or InputRejected for the first unstorable string, key or
    non-finite number (unless `text` is False), or for nesting deeper than `max_depth` (JSON_MAX_DEPTH).
    Iterative: depth never costs Python stack."""
    limit = settings.JSON_MAX_DEPTH if max_depth is None else max_depth
    stack = [(value, field, 0)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, str):
            if text:
                check_text(item, where or "body")
        elif isinstance(item, float):
            if text and not math.isfinite(item):  # `1e999`: no JSON column stores it
                raise InputRejected(where or "body", "Numbers must be finite.")
        elif isinstance(item, dict | list):
            if depth >= limit:
                raise InputRejected(where or "body", f"JSON is nested deeper than {limit} levels.")
            if isinstance(item, dict):
                for key, child in item.items():
                    name = f"{where}.{printable(str(key))}" if where else printable(str(key))
                    if text:
                        check_text(str(key), name)
                    stack.append((child, name, depth + 1))
            else:
                stack.extend((child, f"{where}[{i}]", depth + 1) for i, child in enumerate(item))
    return value


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def json_loads(raw: bytes | str, field: str = "", *, text: bool = True) -> Any:
    """Decode a JSON document from outside: valid UTF-8, bounded depth and (unless `text` is False, for
    a caller that checks item by item) storable text; or InputRejected."""
    try:
        decoded = raw.decode("utf-8") if isinstance(raw, bytes | bytearray) else raw
        value = json.loads(decoded, parse_constant=_refuse_constant)
    except RecursionError:
        limit = settings.JSON_MAX_DEPTH
        raise InputRejected(field or "body", f"JSON is nested deeper than {limit} levels.") from None
    except UnicodeDecodeError:
        raise InputRejected(field or "body", "The body is not valid UTF-8.", unparsable=True) from None
    except ValueError as exc:
        raise InputRejected(field or "body", f"Not valid JSON: {exc}.", unparsable=True) from None
    return check_tree(value, field, text=text)
