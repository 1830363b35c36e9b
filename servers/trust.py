"""What operators withhold of servers' tools, for the gateway: each server's blocks and pins
(servers/models.ToolBlock, ToolPin, pending ToolChange) as a ToolTrust (core/tool_trust.py), read once
per process, path and epoch (servers/cache.TRUST, moved by every block, pin and change), so the steady
state costs no query and a change reaches every process at once. The Principal carries them: the one
rule refuses a withheld tool to everyone, administrators too."""

from __future__ import annotations

from collections.abc import Iterable

from core.epochs import MISSING
from core.tool_trust import ToolTrust
from servers.choices import PinSubject, ToolChangeKind, ToolChangeStatus
from servers.models import Server

NOTHING_WITHHELD = None


def tool_trusts(paths: Iterable[str], epoch=MISSING) -> dict[str, ToolTrust]:
    """{path: ToolTrust} of the servers at `paths` that withhold anything."""
    from servers.cache import TRUST

    if epoch is MISSING:
        epoch = TRUST.epoch()
    trusts = {}
    for path in paths:
        trust = TRUST.get(path, epoch)
        if trust is MISSING:
            trust = _trust_of(path)
            TRUST.put(path, trust, epoch)
        if trust is not NOTHING_WITHHELD:
            trusts[path] = trust
    return trusts


def tool_trusts_cached(paths: Iterable[str], epoch):
    """What tool_trusts would answer, from the cache alone; MISSING when it does not know one of them."""
    from servers.cache import TRUST

    trusts = {}
    for path in paths:
        trust = TRUST.get(path, epoch)
        if trust is MISSING:
            return MISSING
        if trust is not NOTHING_WITHHELD:
            trusts[path] = trust
    return trusts


def _trust_of(path: str) -> ToolTrust | None:
    server = Server.objects.filter(path=path).only("pk", "tools_pinned_at", "prompts_pinned_at").first()
    if server is None:
        return NOTHING_WITHHELD
    blocked = dict(server.tool_blocks.values_list("name", "reason"))
    pins: dict[str, dict[str, str]] = {PinSubject.TOOL: {}, PinSubject.PROMPT: {}}
    for subject, name, digest in server.tool_pins.values_list("subject", "name", "digest"):
        pins[subject][name] = digest
    held: dict[str, set[str]] = {PinSubject.TOOL: set(), PinSubject.PROMPT: set()}
    changed = server.tool_changes.filter(status=ToolChangeStatus.PENDING, kind=ToolChangeKind.CHANGED)
    for subject, name in changed.values_list("subject", "name"):
        held[subject].add(name)
    pinned = pins[PinSubject.TOOL] if server.tools_pinned_at else None
    prompts = pins[PinSubject.PROMPT] if server.prompts_pinned_at else None
    if not blocked and pinned is None and prompts is None:
        return NOTHING_WITHHELD
    return ToolTrust(
        blocked=blocked,
        pinned=pinned,
        held=frozenset(held[PinSubject.TOOL]),
        prompts=prompts,
        prompts_held=frozenset(held[PinSubject.PROMPT]),
    )
