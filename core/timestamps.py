"""The one RFC 3339 formatter of the JSON the registry writes (`/v0.1`, the discovery documents, mirrors):
UTC written as `Z`, as the official registry and the AI Catalog write it."""

from __future__ import annotations

from datetime import datetime


def rfc3339(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None
