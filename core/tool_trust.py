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
PROMPT_AWAITS_APPROVAL = (
    "Prompt '{}' awaits an operator's approval: it is new, or its definition changed since it was approved."
)


@dataclass(frozen=True)
class ToolTrust:
    """One server's withheld tools.

    - `blocked`: a blocked tool's name -> the reason its operator gave.
    - `pinned`: an approved tool's name -> the digest of its approved definition (servers/pins.py); None
      while nothing is pinned (a server not yet discovered), when only blocks apply.
    - `held`: names with a change awaiting approval (their pins are the old definitions).
    - `prompts`, `prompts_held`: the same of the server's prompts (no block is made for a prompt: a
      blocked prompt change takes its pin away)."""

    blocked: Mapping[str, str] = field(default_factory=dict)
    pinned: Mapping[str, str] | None = None
    held: frozenset[str] = frozenset()
    prompts: Mapping[str, str] | None = None
    prompts_held: frozenset[str] = frozenset()

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

    def prompt_refusal(self, prompt: str | None, shown_as: str | None = None) -> str | None:
        """Why `prompts/get` of `prompt` is refused to everyone (not pinned, or changed), or None."""
        if prompt is None or self.prompts is None:
            return None
        if prompt not in self.prompts or prompt in self.prompts_held:
            return PROMPT_AWAITS_APPROVAL.format(shown_as or prompt)
        return None

    def admits(self, name: str, digest: str, subject: str = "tool") -> bool:
        """Whether a live tool (or prompt) with this definition digest may be shown (pinned as it is, not
        blocked)."""
        if subject == "prompt":
            return self.prompts is None or (
                self.prompts.get(name) == digest and name not in self.prompts_held
            )
        if name in self.blocked:
            return False
        return self.pinned is None or (self.pinned.get(name) == digest and name not in self.held)
