"""Reads for agents. Every read starts from `Agent.objects.visible_to(principal)`, before any limit, so
callers get as many results as they asked for and never an agent they may not see."""

from dataclasses import dataclass

from django.db.models import BooleanField, F, Func, Q, TextField, Value
from django.db.models.expressions import RawSQL

from agents.cache import ROUTES
from agents.choices import Visibility
from agents.live import agent_entry, agent_key
from agents.models import Agent
from core.epochs import MISSING
from servers.live.entries import public_entry

# == Listing, lookup and skill discovery (the agent API) ============================================

LIST_LIMIT = 500  # agents in one GET /api/agents answer; `total_count` still counts every match
QUERY_MAX_LENGTH = 200
DISCOVER_DEFAULT_RESULTS, DISCOVER_MAX_RESULTS = 10, 100
SKILL_WEIGHT, TAG_WEIGHT = 0.8, 0.2

# Skill names of a row, newline-joined so a query never matches across two names.
_SKILL_NAMES = RawSQL(
    "SELECT string_agg(skill->>'name', E'\\n') FROM jsonb_array_elements("
    "CASE WHEN jsonb_typeof(agents_agent.skills) = 'array' THEN agents_agent.skills ELSE '[]' END) skill",
    (),
    output_field=TextField(),
)
# Whether a row has a skill whose lower-cased name or id is in the array parameter.
_HAS_SKILL = (
    "EXISTS (SELECT 1 FROM jsonb_array_elements("
    "CASE WHEN jsonb_typeof(agents_agent.skills) = 'array' THEN agents_agent.skills ELSE '[]' END) skill "
    "WHERE lower(skill->>'name') = ANY(%s) OR lower(skill->>'id') = ANY(%s))"
)


def agents_listed(
    principal,
    *,
    query: str = "",
    enabled_only: bool = False,
    visibility: str | None = None,
    limit: int = LIST_LIMIT,
) -> tuple[list[Agent], int]:
    """The visible agents matching the filters, by path, at most `limit`; and how many matched in all.

    `query` is a case-insensitive substring of the name, description, a tag or a skill name."""
    agents = Agent.objects.visible_to(principal)
    if enabled_only:
        agents = agents.enabled()
    if visibility:
        agents = agents.filter(visibility=visibility)
    query = query.strip()[:QUERY_MAX_LENGTH]
    if query:
        tags = Func(F("tags"), Value("\n"), function="array_to_string", output_field=TextField())
        agents = agents.alias(tags_text=tags, skill_names=_SKILL_NAMES).filter(
            Q(name__icontains=query)
            | Q(description__icontains=query)
            | Q(tags_text__icontains=query)
            | Q(skill_names__icontains=query)
        )
    rows = list(agents.select_related("owner").defer("embedding").order_by("path")[:limit])
    total = len(rows) if len(rows) < limit else agents.count()
    return rows, total


@dataclass(frozen=True)
class SkillMatch:
    path: str
    name: str
    relevance_score: float
    matching_skills: list[str]


def _score(agent: Agent, skills: set[str], tags: set[str]) -> SkillMatch:
    """relevance = 0.8 × share of requested skills matched + 0.2 × share of requested tags matched
    (agent tags and skill tags), or the share of skills alone when no tags were asked; 4 decimals."""
    matched_terms, matching = set(), []
    agent_tags = {tag.lower() for tag in agent.tags}
    for skill in agent.skills if isinstance(agent.skills, list) else []:
        if not isinstance(skill, dict):
            continue
        terms = {str(skill.get(key, "")).lower() for key in ("name", "id")} & skills
        if terms:
            matched_terms |= terms
            matching.append(skill.get("name", ""))
        agent_tags.update(str(tag).lower() for tag in skill.get("tags") or [])
    skill_share = len(matched_terms) / len(skills)
    if tags:
        score = SKILL_WEIGHT * skill_share + TAG_WEIGHT * len(tags & agent_tags) / len(tags)
    else:
        score = skill_share
    return SkillMatch(agent.path, agent.name, round(score, 4), matching)


def agents_discovered(principal, *, skills: list[str], tags: list[str], limit: int) -> list[SkillMatch]:
    """Enabled agents `principal` may see that offer at least one of `skills` (a skill name or id,
    case-insensitive), best first, ties by path. Every candidate is scored before the cut."""
    wanted = {skill.strip().lower() for skill in skills if skill.strip()}
    wanted_tags = {tag.strip().lower() for tag in tags if tag.strip()}
    candidates = (
        Agent.objects.visible_to(principal)
        .enabled()
        .filter(RawSQL(_HAS_SKILL, (sorted(wanted), sorted(wanted)), output_field=BooleanField()))
        .only("path", "name", "skills", "tags")
    )
    matches = [_score(agent, wanted, wanted_tags) for agent in candidates]
    matches.sort(key=lambda match: (-match.relevance_score, match.path))
    return matches[:limit]


# == Semantic search ================================================================================
# Reserved for the semantic selectors (embedding search), added by their own change.


def agent_exists(path: str) -> bool:
    """Whether an agent is registered at `path` (the limits' rule asks, through core/targets.py)."""
    return Agent.objects.filter(path=path).exists()


@dataclass(frozen=True)
class AgentRoute:
    """An agent a gateway path may name, with the names of the groups that share it (its own and its
    owner's: an internal agent is seen by their members)."""

    agent: Agent
    sharing: frozenset[str]


def agent_routes(candidates: tuple[str, ...], epoch) -> tuple[AgentRoute, ...]:
    """Every agent among `candidates` (longest first), enabled or not: one query, or none while the route
    cache (agents/cache.py) holds the answer under `epoch`."""
    cached = ROUTES.get(candidates, epoch)
    if cached is not MISSING:
        return cached
    found = {
        agent.path: agent
        for agent in Agent.objects.filter(path__in=candidates)
        .defer("embedding")
        .select_related("owner")
        .prefetch_related("groups", "owner__groups")
    }
    routes = tuple(
        AgentRoute(agent, _sharing(agent)) for path in candidates if (agent := found.get(path)) is not None
    )
    ROUTES.put(candidates, routes, epoch)
    return routes


def agent_routes_cached(candidates: tuple[str, ...], epoch):
    """What agent_routes would answer, from the route cache alone; MISSING when it does not know."""
    return ROUTES.get(candidates, epoch)


def _sharing(agent: Agent) -> frozenset[str]:
    names = {group.name for group in agent.groups.all()}
    if agent.owner is not None:
        names |= {group.name for group in agent.owner.groups.all()}
    return frozenset(names)


def agents_health_snapshot(principal=None) -> dict[str, dict]:
    """`{<agent path>/a2a: entry}` (agents/live.py) of the agents `principal` may see, or of the enabled
    public agents when there is none (the public socket)."""
    if principal is not None:
        rows = Agent.objects.visible_to(principal)
    else:
        rows = Agent.objects.enabled().filter(visibility=Visibility.PUBLIC)
    fields = ("path", "health_status", "last_checked_at", "health_detail", "is_enabled", "skills")
    entries = {agent_key(agent.path): agent_entry(agent) for agent in rows.only(*fields).order_by("path")}
    return entries if principal is not None else {key: public_entry(e) for key, e in entries.items()}
