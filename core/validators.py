"""Rules on registry paths, shared by servers and agents.

A path is `/` followed by one or more segments of lower-case letters, digits, `-` and `_`, separated
by `/`: no empty segments, no `.` or `..`, no query or fragment. `normalize_path` turns what people
type (`Weather`, `/weather/`, ` /team/Weather `) into that form; `validate_registry_path` checks it.

A server path becomes the MCP Registry name `io.<namespace>/<segments joined by ".">`: the name part
of server.schema.json allows [a-zA-Z0-9._-] and no second `/`, and since `.` never occurs in a path the
mapping is reversible.
"""

import re

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator

PATH_PATTERN = re.compile(r"^(/[a-z0-9_-]+)+$")
PATH_MAX_LENGTH = 150

validate_http_url = URLValidator(
    schemes=["http", "https"], message="Enter an absolute http:// or https:// URL."
)


WILDCARDS = ("*", "all")  # in scope rules: every server (`*`) or every path (`all`); never a path


def normalize_path(value: str) -> str:
    """Trim, lower-case, add the leading `/` and drop a trailing one; the result still needs validating.
    The one spelling of a path everywhere (servers, agents, scope rules, requests); the wildcards stay."""
    value = str(value).strip().lower()
    if value in WILDCARDS:
        return value
    if value and not value.startswith("/"):
        value = f"/{value}"
    if len(value) > 1 and value.endswith("/"):
        value = value[:-1]
    return value


def validate_registry_path(value: str) -> None:
    if len(value or "") > PATH_MAX_LENGTH:
        raise ValidationError(f"Path must be at most {PATH_MAX_LENGTH} characters.", code="path_too_long")
    if not PATH_PATTERN.match(value or ""):
        raise ValidationError(
            "Path must be '/' and segments of lower-case letters, digits, '-' or '_' separated by '/' "
            "(no empty segments, no '..', no query or fragment).",
            code="invalid_path",
        )


def registry_path_field(value: str) -> str:
    """A serializer's `validate_path`: the normalized registry path, or DRF's ValidationError with why not
    (the server and agent APIs refuse the same paths in the same words)."""
    from rest_framework import serializers

    path = normalize_path(value)
    try:
        validate_registry_path(path)
    except ValidationError as exc:
        raise serializers.ValidationError(exc.messages) from None
    return path
