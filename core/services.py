"""Helpers every app's services share: which fields a caller may set and which really changed."""

from collections.abc import Iterable

from django.db import models


def require_editable(fields: dict, allowed: Iterable[str]) -> None:
    """Refuse fields a service does not let callers set (health fields, owners, paths...)."""
    unknown = set(fields) - set(allowed)
    if unknown:
        raise TypeError(f"not editable: {', '.join(sorted(unknown))}")


def apply_changes(instance: models.Model, fields: dict) -> list[str]:
    """Set the fields whose values differ; return their names, sorted, for the audit row."""
    changed = sorted(name for name, value in fields.items() if getattr(instance, name) != value)
    for name in changed:
        setattr(instance, name, fields[name])
    return changed
