"""Small filters the console's templates need."""

import json

from django import template
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import mark_safe

register = template.Library()


@register.filter
def get_item(mapping, key):
    """`mapping[key]` (`""` for the whole, as the state filters name it), or "" when missing."""
    return mapping.get(key or "all", "")


@register.filter
def pretty_json(value) -> str:
    """A JSON value indented for reading (autoescaped by the template)."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


UNITS = (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))


@register.filter
def duration(seconds) -> str:
    """A length of time in the two largest units it has: 28800 → "8 hours", 93600 → "1 day 2 hours"."""
    remaining = max(0, int(seconds))
    parts = []
    for name, size in UNITS:
        count, remaining = divmod(remaining, size)
        if count:
            parts.append(f"{count} {name}{'' if count == 1 else 's'}")
    return " ".join(parts[:2]) or "0 seconds"


@register.filter
def multiply(value, factor):
    return int(value) * int(factor)


def _largest_unit(seconds: float) -> str:
    """28 → "28 seconds", 150 → "2 minutes", 7300 → "2 hours": the largest whole unit."""
    seconds = int(seconds)
    for name, size in UNITS:
        if seconds >= size:
            count = seconds // size
            return f"{count} {name}{'' if count == 1 else 's'}"
    return "0 seconds"


@register.filter
def ago(moment) -> str:
    """A past moment as people say it: "just now", "3 minutes ago" (static/js/times.js keeps it so)."""
    if moment is None:
        return ""
    seconds = (timezone.now() - moment).total_seconds()
    return "just now" if seconds < 10 else f"{_largest_unit(seconds)} ago"


@register.filter
def from_now(moment) -> str:
    """A coming moment: "in 3 minutes", or "due now" once it is less than 10 seconds away or past."""
    if moment is None:
        return ""
    seconds = (moment - timezone.now()).total_seconds()
    return "due now" if seconds < 10 else f"in {_largest_unit(seconds)}"


@register.filter
def ticks(text) -> str:
    """Words with `backticked` names, as HTML with those names in <code> (the rest escaped)."""
    parts = str(text).split("`")
    return mark_safe(  # noqa: S308 - every part is escaped here
        "".join(
            f"<code>{escape(part)}</code>" if index % 2 else escape(part) for index, part in enumerate(parts)
        )
    )
