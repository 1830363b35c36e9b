"""A credential's reach: the one server (or every server) and the tools a token or an application's
consent is narrowed to, below what its holder may do (`narrowed` in accounts/principal.py applies it).

A credential with a reach never administers, whoever its holder is: it may call the chosen tools of the
chosen server, and send there the other methods its holder's rules allow (an administrator's, all of
them), and see that server only. The holder's rights are read at every request, so a reach never grants
what its holder has lost since.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.validators import normalize_path

ANY = "*"


@dataclass(frozen=True)
class Reach:
    server: str  # a server path, or "*": every server the holder may reach
    tools: frozenset[str]  # {"*"}: every tool the holder may call there

    @classmethod
    def of(cls, server: str, tools) -> Reach:
        names = frozenset(tools or (ANY,))
        return cls(server=ANY if server == ANY else normalize_path(server), tools=names)

    @classmethod
    def from_claim(cls, raw) -> Reach | None:
        """The reach a token claim or a consent row carries; None when there is none (or it is malformed,
        which the issuer never writes: such a credential then reaches nothing, see `narrowed`)."""
        if raw is None:
            return None
        if not isinstance(raw, dict) or not isinstance(raw.get("server"), str):
            return cls(server="", tools=frozenset())
        tools = raw.get("tools")
        names = [name for name in tools if isinstance(name, str)] if isinstance(tools, list) else []
        return cls.of(raw["server"], names or [ANY]) if raw["server"] else cls("", frozenset())

    def as_claim(self) -> dict:
        return {"server": self.server, "tools": sorted(self.tools)}

    @property
    def every_tool(self) -> bool:
        return ANY in self.tools

    def in_words(self) -> str:
        """What the credential may do, for the person making it: "can call `add`, `echo` on /walk-time;
        cannot administer"."""
        where = "every server you may reach" if self.server == ANY else self.server
        if self.every_tool:
            return f"can call every tool you may call on {where}; cannot administer"
        names = ", ".join(f"`{name}`" for name in sorted(self.tools))
        return f"can call {names} on {where}; cannot administer"
