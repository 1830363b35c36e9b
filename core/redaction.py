"""The one rule for keeping secrets out of what the registry hands to others (the audit export, captured
call arguments in traces): a value under a key that names a secret, and any text that reads as a
credential wherever it stands (a bearer token, a JWT, a private key, a `user:password@` URL), become
REDACTED. Applied to JSON-like values (dicts, lists, strings), whatever their depth."""

from __future__ import annotations

import re

REDACTED = "[redacted]"
SECRET_KEY = re.compile(
    r"pass(word|wd|phrase)?$|secret|token|authorization|api[-_]?key|credential|cookie|private[-_]?key"
    r"|assertion|signature|session[-_]?id|otp$",
    re.IGNORECASE,
)
SECRET_TEXT = re.compile(
    r"\bbearer\s+\S+|\beyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]*|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|://[^/\s:@]+:[^/\s@]+@",
    re.IGNORECASE,
)


def redacted(value, depth: int = 0):
    """`value` with every secret it holds replaced by REDACTED."""
    if depth > 64:
        return REDACTED
    if isinstance(value, dict):
        return {
            key: REDACTED if SECRET_KEY.search(str(key)) else redacted(item, depth + 1)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [redacted(item, depth + 1) for item in value]
    if isinstance(value, str) and SECRET_TEXT.search(value):
        return REDACTED
    return value
