"""Embedding agents for semantic search: what text an agent is found by, and the task's work."""

from agents.models import Agent
from core.embeddings import rows_embed


def agent_text(agent: Agent) -> str:
    """The text an agent is found by: name, description, skills (`convert_currency` read as words), tags,
    then skill examples.

    The model reads only the first 256 word pieces, so what says most about the agent comes first and
    the examples, the longest and least distinctive part, come last."""
    skills = [skill for skill in _list(agent.skills) if isinstance(skill, dict)]
    lines = [agent.name, agent.description]
    for skill in skills:
        name, description = _text(skill.get("name")).replace("_", " "), _text(skill.get("description"))
        lines.append(f"Skill: {name}: {description}" if description else f"Skill: {name}")
    tags = [*(agent.tags or []), *(_text(tag) for skill in skills for tag in _list(skill.get("tags")))]
    if tags:
        lines.append(f"Tags: {', '.join(dict.fromkeys(tag for tag in tags if tag))}")
    examples = [_text(example) for skill in skills for example in _list(skill.get("examples"))]
    if examples:
        lines.append(f"Examples: {'; '.join(example for example in examples if example)}")
    return "\n".join(line.strip() for line in lines if line and line.strip())


def agents_embed(agent_ids: list[int] | None = None) -> int:
    """Embed the given agents, or every dirty agent, when they are marked dirty; returns how many were
    stored. An agent edited while it was embedded stays dirty for the next run."""
    dirty = Agent.objects.embedding_dirty().defer("embedding")
    if agent_ids is not None:
        return rows_embed(dirty.filter(pk__in=agent_ids), agent_text)
    return rows_embed(dirty, agent_text, sweep="agents")


def _text(value) -> str:
    return str(value).strip() if value is not None else ""


def _list(value) -> list:
    return value if isinstance(value, list) else []
