"""The one vocabulary of what the gateway carries traffic to, below every app that holds one: the kinds of
target, a target by kind, path and tags, and the registry through which the apps that hold targets answer
the apps below them, filled in each app's `AppConfig.ready()`:

- `holders`: what else holds a gateway path, by kind (a server is refused at a virtual server's path);
- `exists`: whether a target of a kind is registered at a path (the limits' rule names targets);
- `discovery_entries`: more entries of the public discovery document (`/.well-known/mcp-servers`);
- `dashboard_sections`: more sections of the dashboard;
- `discovery_headers`: the outbound headers of health checks and tool discovery (the credential resolver);
- `token_reach`: the check of a credential narrowed to one server and chosen tools;
- `skills_listed`: what a server's check found of its skills (the skills app mirrors what changed);
- `upstreams`: the kinds that hold an upstream credential (servers, agents), by kind: the Connections
  page, the sign-in and the credential resolver serve every one alike.

An app asks the registry, never imports upward: the layers of `.importlinter` stay what they say. A new
kind of target is one entry here and one adapter in the gateway."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import models


class TargetKind(models.TextChoices):
    SERVER = "server", "Server"
    VIRTUAL_SERVER = "virtual_server", "Virtual server"
    AGENT = "agent", "A2A agent"
    SKILL = "skill", "Agent Skill"


@dataclass(frozen=True)
class Target:
    """What a gateway request reaches: its kind, path, and a server's tags (limits by tag)."""

    kind: str
    path: str
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class UpstreamKind:
    """A kind of target that holds an upstream credential (its model has servers/shared_headers.py's
    fields): its model; `usable(principal)`, the targets of the kind that need the caller's own credential
    and that the caller may use, by path; `visible(principal, path)`, the one at a path that the caller
    may use, or None; `page(target)`, where its page is."""

    model: type
    usable: Callable
    visible: Callable
    page: Callable[[object], str]


@dataclass
class Registry:
    holders: dict[str, Callable[[str], str | None]] = field(default_factory=dict)
    exists: dict[str, Callable[[str], bool]] = field(default_factory=dict)
    discovery_entries: list[Callable[[str], list[dict]]] = field(default_factory=list)
    dashboard_sections: list[Callable] = field(default_factory=list)
    discovery_headers: Callable | None = None
    token_reach: Callable | None = None
    skills_listed: Callable | None = None
    upstreams: dict[str, UpstreamKind] = field(default_factory=dict)
    restrictions: (
        Callable[[list[tuple[str, str, tuple[str, ...]]]], dict[str, list[tuple[str, str]]]] | None
    ) = None

    def holder_of(self, path: str) -> str | None:
        """What holds `path` besides a server ("the virtual server Team tools"), or None."""
        return next((held for holds in self.holders.values() if (held := holds(path))), None)

    def restrictions_of(
        self, targets: list[tuple[str, str, tuple[str, ...]]]
    ) -> dict[str, list[tuple[str, str]]]:
        """What operators' quarantines and limits say of each (kind, path, tags), by path, as ("quarantine"
        | "limit", words) (the limits app answers; pages show it beside the target)."""
        return self.restrictions(targets) if self.restrictions is not None and targets else {}

    def registered(self, kind: str, path: str) -> bool:
        check = self.exists.get(kind)
        return bool(check and check(path))


TARGETS = Registry()
