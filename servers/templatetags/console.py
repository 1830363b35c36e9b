"""Small filters the console's templates need."""

import json

from django import template

register = template.Library()


@register.filter
def get_item(mapping, key):
    """`mapping[key]` (`""` for the whole, as the state filters name it), or "" when missing."""
    return mapping.get(key or "all", "")


@register.filter
def pretty_json(value) -> str:
    """A JSON value indented for reading (autoescaped by the template)."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
