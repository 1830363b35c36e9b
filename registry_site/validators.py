"""Rules on registry paths, shared by servers and agents: `/<name>`, one segment.

A server path becomes the MCP Registry name `io.<namespace>/<name>`, whose schema pattern is
^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$ with at most 200 characters, so the name part allows no '/'.
"""

import re

from django.core.exceptions import ValidationError

PATH_PATTERN = re.compile(r"^/[a-zA-Z0-9._-]+$")
PATH_MAX_LENGTH = 150


def validate_registry_path(value: str) -> None:
    if len(value or "") > PATH_MAX_LENGTH:
        raise ValidationError(f"Path must be at most {PATH_MAX_LENGTH} characters.", code="path_too_long")
    if not PATH_PATTERN.match(value or "") or value in ("/.", "/.."):
        raise ValidationError(
            "Path must be '/' followed by letters, digits, '.', '_' or '-' (no further '/').",
            code="invalid_path",
        )
