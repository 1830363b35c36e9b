"""What operators withhold of a server's tools from every caller, administrators included, whatever the
scope rules say: a plain value the Principal carries for the gateway (accounts/principal.py), built by
servers/trust.py from the blocks operators made (servers/services/tool_blocks.py) and the pinned tools
(servers/services/pins.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

AWAITS_APPROVAL = (
    "Tool '{}' awaits an operator's approval: it is new, or its definition changed since it was approved."
)


@dataclass(frozen=True)
class ToolTrust:
    """One server's withheld tools.

    - `blocked`: a blocked tool's name -> the reason its operator gave.
    - `pinned`: an approved tool's name -> the digest of its approved definition (servers/pins.py); None
      while nothing is pinned (a server not yet discovered), when only blocks apply.
    - `held`: names with a change awaiting approval (their pins are the old definitions)."""

    blocked: Mapping[str, str] = field(default_factory=dict)
    pinned: Mapping[str, str] | None = None
    held: frozenset[str] = frozenset()

    def refusal(self, tool: str | None, shown_as: str | None = None) -> str | None:
        """Why a call of `tool` is refused to everyone, in the words the caller sees (naming the tool as
        the caller knows it, `shown_as`: a virtual server's alias); None when it is not."""
        if tool is None:
            return None
        name = shown_as or tool
        if tool in self.blocked:
            reason = self.blocked[tool].rstrip()
            if reason and reason[-1] not in ".!?":
                reason += "."
            return f"Tool '{name}' is blocked by an operator" + (f": {reason}" if reason else ".")
        if self.pinned is not None and (tool not in self.pinned or tool in self.held):
            return AWAITS_APPROVAL.format(name)
        return None

    def admits(self, name: str, digest: str) -> bool:
        """Whether a live tool with this definition digest may be shown (pinned as it is, not blocked)."""
        if name in self.blocked:
            return False
        return self.pinned is None or (self.pinned.get(name) == digest and name not in self.held)
