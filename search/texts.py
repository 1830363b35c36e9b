"""The text each searchable row is found by: what the embedding model reads for an agent, a server, a
tool and a catalog entry. The model reads only the first 256 word pieces, so what says most comes first."""

from agents.models import Agent
from catalog.models import ServerVersion
from core.embeddings import tool_words
from servers.models import Server, Tool
from skills.models import Skill


def skill_text(skill: Skill) -> str:
    """A skill is found by its name (`pdf-tools` read as words), its description (what its SKILL.md says it
    does and when to use it), its compatibility, then its tags."""
    lines = [skill.name.replace("-", " "), skill.description, skill.compatibility]
    if skill.tags:
        lines.append(f"Tags: {', '.join(skill.tags)}")
    return _joined([line for line in lines if line])


def agent_text(agent: Agent) -> str:
    """An agent is found by its name, description, skills (`convert_currency` read as words), tags, then
    skill examples: the examples, the longest and least distinctive part, come last."""
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
    return _joined(lines)


def server_text(server: Server) -> str:
    """A server is found by its name, description, tags and the names of its tools (a change to any of
    them marks it dirty: servers.services.embeddings.EMBEDDED_FIELDS and the tool writes)."""
    tool_names = [tool.name.replace("_", " ") for tool in server.tools.all()]
    return _joined(
        [
            server.name,
            server.description,
            f"Tags: {', '.join(server.tags)}" if server.tags else "",
            f"Tools: {', '.join(tool_names)}" if tool_names else "",
        ]
    )


def tool_text(tool: Tool) -> str:
    """A tool is found by its name read as words (`convert_currency` → "convert currency") and its
    description (core/embeddings.tool_words)."""
    return tool_words(tool.name, tool.description)


def version_text(row: ServerVersion) -> str:
    """A catalog entry is found by its name, title and description: short texts, since the model's time
    grows with their length and a mirror embeds thousands (bench/mirror.py)."""
    title = row.document.get("title") if isinstance(row.document, dict) else None
    return _joined([row.name, title if isinstance(title, str) else "", row.description])


def _joined(lines: list[str]) -> str:
    return "\n".join(line.strip() for line in lines if line and line.strip())


def _text(value) -> str:
    return str(value).strip() if value is not None else ""


def _list(value) -> list:
    return value if isinstance(value, list) else []
