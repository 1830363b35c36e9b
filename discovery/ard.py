"""ARD (Agentic Resource Discovery, v0.9) search over this registry, at `<registry>/ard` (the AI Catalog
names it, `application/ai-registry+json`): `POST /ard/search` ranks the servers, virtual servers and
agents the caller may see by the registry's semantic search (scores 0-100), filtered by `type`, `tags`,
`publisher`, `identifier` and `version`, paged by `pageSize` and `pageToken`; `federation: none` searches
this registry only and `referrals` also names the registries it mirrors; `GET /ard/agents/<identifier>`
is one entry; `POST /ard/explore` is 501, as ARD has a registry that does not offer it answer. Errors are
ARD's shape, `{"errorCode", "message"}`."""

from __future__ import annotations

import base64
from urllib.parse import urlsplit

from agents.models import Agent
from catalog.models import Upstream
from discovery import ai_catalog
from search.selectors import AGENT, SERVER, registry_semantic
from search.virtual_servers import VIRTUAL
from virtual_servers.listing import visible_to

ENTITY_TYPES = (SERVER, VIRTUAL, AGENT)
FEDERATION = ("auto", "referrals", "none")
FILTERS = ("type", "tags", "publisher", "identifier", "version")
PAGE_SIZE, PAGE_MAX = 10, 100
RANKED_MAX = 300  # entries ranked per query, before filters and paging
TEXT_MAX = 1000


class ArdError(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message

    def body(self) -> dict:
        return {"errorCode": self.code, "message": self.message}


def _invalid(message: str) -> ArdError:
    return ArdError(400, "INVALID_ARGUMENT", message)


def read_search(body) -> dict:
    """The search request, checked as ARD's schema has it; ArdError otherwise."""
    if not isinstance(body, dict) or not isinstance(body.get("query"), dict):
        raise _invalid('A search is {"query": {"text": ...}}.')
    if extra := sorted(set(body) - {"query", "federation", "pageSize", "pageToken"}):
        raise _invalid(f"Unknown member: {extra[0][:100]}.")
    query = body["query"]
    if extra := sorted(set(query) - {"text", "filter"}):
        raise _invalid(f"Unknown query member: {extra[0][:100]}.")
    text = query.get("text")
    if not isinstance(text, str) or not text.strip() or len(text) > TEXT_MAX:
        raise _invalid(f"query.text is required: 1 to {TEXT_MAX} characters.")
    constraints = query.get("filter", {})
    if not isinstance(constraints, dict):
        raise _invalid("query.filter is an object of field paths to values.")
    wanted = {}
    for key, value in constraints.items():
        if key not in FILTERS:
            supported = ", ".join(FILTERS)
            raise _invalid(f"Filtering on {str(key)[:100]} is not supported here; use one of {supported}.")
        values = value if isinstance(value, list) else [value]
        if not all(isinstance(v, str) for v in values):
            raise _invalid(f"query.filter.{key} holds strings.")
        wanted[key] = set(values)
    federation = body.get("federation", "auto")
    if federation not in FEDERATION:
        raise _invalid(f"federation is one of {', '.join(FEDERATION)}.")
    size = body.get("pageSize", PAGE_SIZE)
    if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= PAGE_MAX:
        raise _invalid(f"pageSize is 1 to {PAGE_MAX}.")
    return {
        "text": text.strip(),
        "filter": wanted,
        "federation": federation,
        "size": size,
        "offset": _offset(body.get("pageToken")),
    }


def search(principal, base_url: str, request: dict) -> dict:
    matches = registry_semantic(principal, request["text"], ENTITY_TYPES, RANKED_MAX)
    results = []
    for match in matches:
        entry = _entry(match.entity_type, match.row, base_url)
        if _passes(entry, request["filter"]):
            score = max(0, min(100, round(match.relevance_score * 100)))
            results.append({**entry, "score": score, "source": f"{base_url}/ard"})
    start, end = request["offset"], request["offset"] + request["size"]
    answer: dict = {"results": results[start:end]}
    if end < len(results):
        answer["pageToken"] = base64.urlsafe_b64encode(str(end).encode()).decode()
    if request["federation"] == "referrals":
        answer["referrals"] = [
            {
                "identifier": f"urn:air:{urlsplit(upstream.url).hostname}:registry:{upstream.name}",
                "displayName": upstream.name,
                "type": ai_catalog.REGISTRY,
                "url": upstream.url,
            }
            for upstream in Upstream.objects.filter(is_enabled=True).order_by("name")
        ]
    return answer


def entry_of(principal, base_url: str, identifier: str) -> dict:
    """The entry an identifier names, if the caller may see it; ArdError 404 otherwise."""
    prefix = f"urn:air:{urlsplit(base_url).hostname}:"
    kind, _, name = identifier.removeprefix(prefix).partition(":")
    path = "/" + name.replace(".", "/")
    if identifier.startswith(prefix) and kind == "mcp":
        server = ai_catalog.servers_shown(principal).filter(path=path).first()
        if server is not None:
            return ai_catalog.server_entry(server, base_url)
        virtual = visible_to(principal).filter(path=path, is_enabled=True).first()
        if virtual is not None:
            return ai_catalog.virtual_entry(virtual, base_url)
    if identifier.startswith(prefix) and kind == "a2a":
        agents = Agent.objects.visible_to(principal).filter(path=path, is_enabled=True)
        agent = agents.defer("embedding").first()
        if agent is not None:
            return ai_catalog.agent_entry(agent, base_url)
    raise ArdError(404, "NOT_FOUND", f"No entry {identifier[:200]} here.")


def _entry(entity_type: str, row, base_url: str) -> dict:
    if entity_type == SERVER:
        return ai_catalog.server_entry(row, base_url)
    if entity_type == VIRTUAL:
        return ai_catalog.virtual_entry(row, base_url)
    return ai_catalog.agent_entry(row, base_url)


def _passes(entry: dict, wanted: dict[str, set[str]]) -> bool:
    for key, values in wanted.items():
        if key == "publisher":
            found = {entry["identifier"].split(":")[2]}
        elif key == "tags":
            found = set(entry.get("tags", []))
        else:
            found = {entry.get(key)}
        if not found & values:
            return False
    return True


def _offset(token) -> int:
    if token is None:
        return 0
    try:
        offset = int(base64.urlsafe_b64decode(str(token).encode()).decode())
    except (ValueError, UnicodeDecodeError):
        raise _invalid("pageToken is not one this registry gave.") from None
    if offset < 0:
        raise _invalid("pageToken is not one this registry gave.")
    return offset
