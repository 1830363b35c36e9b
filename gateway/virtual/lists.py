"""A virtual server's lists (`tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`):
every member's whole list gathered at once (members' sessions opened on first use with the caller's own
credential for each: gateway/virtual/members.py), what the definition says applied
(virtual_servers/mapping.py), and what the caller may use both at the virtual path and on the member's
own server kept; a member that cannot answer is left out. Each process keeps the gathered lists per
caller (LISTED) until the virtual servers' epoch moves (a definition, a member's server, a member's
`list_changed`: gateway/virtual/streams.py) or the caller's rights do."""

from __future__ import annotations

import asyncio
import logging

from core.epochs import MISSING, EpochCache
from gateway import jsonrpc, messages, sessions
from gateway.virtual import members as virtual_members
from gateway.virtual import sessions as virtual_sessions
from gateway.virtual.members import Caller, MemberFailed
from virtual_servers.mapping import prompt_seen, resource_seen, tool_seen, uris_prefixed

logger = logging.getLogger(__name__)

# Members' lists as clients see them, per virtual server, method and caller (see `gathered`), under the
# virtual servers' epoch (virtual_servers/cache.py VIRTUALS).
LISTED = EpochCache("virtual-lists", max_entries=10_000)
LISTS = {
    "tools/list": "tools",
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
}
PINNED_SUBJECTS = {"tools/list": "tool", "prompts/list": "prompt"}


async def merged(virtual, caller: Caller, method: str) -> list[dict]:
    """A list of every member, as clients see it and cut to what the caller may use."""
    key = LISTS[method]
    shown, names = [], {}
    for member, seen, own in await _gathered(virtual, caller, method):
        if _may_use(caller, virtual, member, method, seen, own):
            name = seen.get("name") if method in ("tools/list", "prompts/list") else None
            if name is not None:
                if name in names:
                    continue  # a name another member's list showed first
                names[name] = [member.key, own]
            shown.append(seen)
    if method in ("tools/list", "prompts/list") and caller.record.get(key) != names:
        caller.record[key] = names
        await virtual_sessions.keep(caller.virtual_path, caller.session_id, caller.record)
    return shown


async def _gathered(virtual, caller: Caller, method: str) -> list[tuple]:
    """(member, item as clients see it, its own name or URI) of every member's whole list, before the
    caller's rights: from this process's cache for this caller when every member answered last time
    (LISTED: moved by any change of the virtual server, its members' servers or the caller's rights)."""
    epochs = caller.epochs
    cache_key = (virtual.pk, method, sessions.owner(caller.principal), epochs.principals, epochs.trust)
    cached = LISTED.get(cache_key, caller.epochs.virtuals)
    if cached is not MISSING:
        return cached
    gathered = await asyncio.gather(
        *(virtual_members.whole_list(caller, member, method, LISTS[method]) for member in virtual.members),
        return_exceptions=True,
    )
    found, complete = [], True
    for member, items in zip(virtual.members, gathered, strict=True):
        if isinstance(items, BaseException):
            if not isinstance(items, MemberFailed):
                raise items
            logger.info("A member of %s is left out of %s: %s", virtual.path, method, items)
            complete = False
            continue
        for item in _pinned(caller.principal, member, method, items):
            seen, own = _seen(virtual, method, item, member)
            if seen is not None:
                found.append((member, seen, own))
    if complete:
        LISTED.put(cache_key, found, caller.epochs.virtuals)
    return found


def _pinned(principal, member, method: str, items: list[dict]) -> list[dict]:
    """A member's tools (or prompts) cut to those its server's operators approved as they are shown, by
    the rule of the member's own path (gateway/messages.pinned_names): a change is held here too."""
    subject = PINNED_SUBJECTS.get(method)
    trust = principal.trust.get(member.server.path) if subject else None
    if trust is None or (trust.pinned if subject == "tool" else trust.prompts) is None:
        return items
    named = [item for item in items if isinstance(item.get("name"), str)]
    admitted = messages.pinned_names(trust, member.server.path, named, None, subject)
    return [item for item in named if item["name"] in admitted]


def _seen(virtual, method: str, item: dict, member) -> tuple[dict | None, str | None]:
    if method == "tools/list":
        return tool_seen(item, member), item.get("name")
    if method == "prompts/list":
        return prompt_seen(item, member), item.get("name")
    field = "uriTemplate" if method == "resources/templates/list" else "uri"
    return resource_seen(item, member, uris_prefixed(virtual.members), field), item.get(field)


def _may_use(caller: Caller, virtual, member, method: str, seen: dict, own) -> bool:
    principal = caller.principal
    if method == "tools/list":
        return principal.allows_mcp(virtual.path, jsonrpc.TOOLS_CALL, seen["name"]) and principal.allows_mcp(
            member.server.path, jsonrpc.TOOLS_CALL, own
        )
    used = "prompts/get" if method == "prompts/list" else "resources/read"
    return principal.allows_mcp(virtual.path, used) and principal.allows_mcp(member.server.path, used)
