"""The skills as agentskills' well-known discovery serves them (v0.2.0,
`/.well-known/agent-skills/index.json`): one entry per skill the caller may see, `type` `skill-md` (a skill
that is its SKILL.md alone, served as it is) or `archive` (the registry's .tar.gz of its files:
skills/archives.packed), with the `sha256:` digest of exactly the bytes served. The older index clients
still read (`/.well-known/skills/index.json`, v0.1.0: name, description and the files' paths, each file
at `/.well-known/skills/<name>/<path>`) lists the same skills. Only approved versions are ever served."""

from __future__ import annotations

from skills.archives import SKILL_MD, packed
from skills.models import Skill, SkillFile

SCHEMA = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
BASE = "/.well-known/agent-skills"
OLD_BASE = "/.well-known/skills"


def index(skills) -> dict:
    entries = []
    for skill in skills:
        version = skill.approved
        if version is None:
            continue
        alone = [entry["path"] for entry in version.files] == [SKILL_MD]
        if alone:
            entry = {
                "type": "skill-md",
                "url": f"{BASE}/{skill.name}/SKILL.md",
                "digest": _sha(version.files[0]),
            }
        else:
            entry = {
                "type": "archive",
                "url": f"{BASE}/{skill.name}.tar.gz",
                "digest": f"sha256:{version.archive_sha256}",
            }
        entries.append({"name": skill.name, "description": skill.description, **entry})
    return {"$schema": SCHEMA, "skills": entries}


def old_index(skills) -> dict:
    return {
        "skills": [
            {
                "name": skill.name,
                "description": skill.description,
                "files": [entry["path"] for entry in skill.approved.files],
            }
            for skill in skills
            if skill.approved is not None
        ]
    }


def archive_of(skill: Skill) -> bytes | None:
    if skill.approved is None:
        return None
    stored = SkillFile.objects.filter(version=skill.approved).values_list("path", "content")
    return packed({path: bytes(content) for path, content in stored})


def _sha(entry: dict) -> str:
    return f"sha256:{entry['sha256']}"
