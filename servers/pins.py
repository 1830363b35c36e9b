"""What a pin holds of a tool: the parts of its definition that reach a model (name, title, description,
input and output schemas, annotations), as MCP's `tools/list` spells them, and their digest; of a prompt,
its name, title, description and arguments, as `prompts/list` spells them. The same
functions serve tool discovery (servers/services/pins.py), the gateway's look at live lists
(gateway/messages.py) and the console's diff, so a tool is "the same" by one rule everywhere."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

PINNED_FIELDS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")
PROMPT_FIELDS = ("name", "title", "description", "arguments")
FIELDS = {"tool": PINNED_FIELDS, "prompt": PROMPT_FIELDS}  # by servers.choices.PinSubject


def definition_of(item: Mapping, subject: str = "tool") -> dict:
    """The pinned parts of a `tools/list` (or `prompts/list`) entry (absent and null fields left out, so
    both read alike)."""
    return {name: item[name] for name in FIELDS[subject] if item.get(name) is not None}


def digest_of(definition: Mapping) -> str:
    """sha256 of the definition's canonical JSON (keys sorted, no spaces, UTF-8): equal definitions have
    equal digests whatever order their keys came in."""
    canonical = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def set_digest(digests: Mapping[str, str]) -> str:
    """The digest of a whole tool set, from each tool's: an addition, removal or rename changes it."""
    return digest_of(sorted(digests.items()))


def field_diff(
    old: Mapping | None, new: Mapping | None, subject: str = "tool"
) -> list[tuple[str, object, object]]:
    """(field, old value, new value) of every pinned field that differs; None stands for absent."""
    old, new = old or {}, new or {}
    return [
        (name, old.get(name), new.get(name)) for name in FIELDS[subject] if old.get(name) != new.get(name)
    ]
