"""The agentskills.io rules for a skill, as its reference validator applies them, for every surface that
publishes one: SKILL.md begins with a YAML frontmatter (between `---` lines) whose keys are only `name`,
`description`, `license`, `compatibility`, `metadata` and `allowed-tools`; `name` is 1 to 64 lower-case
letters, digits and single hyphens (not at either end) and equals the skill folder's name; `description`
is 1 to 1024 characters; `compatibility` at most 500; `metadata` a mapping of strings. Each violation is
refused naming its rule (SkillRefused: answered 400)."""

from __future__ import annotations

import re

import yaml

ALLOWED_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
NAME_MAX, DESCRIPTION_MAX, COMPATIBILITY_MAX = 64, 1024, 500
FRONTMATTER_MAX = 64 * 1024


class SkillRefused(ValueError):
    """A skill the registry will not store: `rule` names the rule, the message says what to change."""

    def __init__(self, rule: str, message: str):
        super().__init__(message)
        self.rule = rule


def frontmatter_of(skill_md: bytes, folder: str) -> dict:
    """SKILL.md's frontmatter, checked by the rules above against the skill `folder`'s name ("": the
    folder is named by the skill itself)."""
    try:
        text = skill_md.decode("utf-8")
    except UnicodeDecodeError:
        raise SkillRefused("skill_md_utf8", "SKILL.md must be UTF-8 text.") from None
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        raise SkillRefused("frontmatter", "SKILL.md must begin with a YAML frontmatter between --- lines.")
    try:
        end = next(i for i, line in enumerate(lines[1:], start=1) if line.strip() == "---")
    except StopIteration:
        raise SkillRefused("frontmatter", "SKILL.md's frontmatter has no closing --- line.") from None
    block = "\n".join(lines[1:end])
    if len(block) > FRONTMATTER_MAX:
        raise SkillRefused("frontmatter", f"The frontmatter may be at most {FRONTMATTER_MAX} bytes.")
    try:
        if any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(block)):
            raise SkillRefused("frontmatter", "The frontmatter may not use YAML aliases (*name).")
        found = yaml.safe_load(block)
    except yaml.YAMLError as error:
        raise SkillRefused("frontmatter", f"The frontmatter is not valid YAML: {error}.") from None
    except RecursionError:
        raise SkillRefused("frontmatter", "The frontmatter is nested too deeply.") from None
    if not isinstance(found, dict):
        raise SkillRefused("frontmatter", "The frontmatter must be a mapping of keys to values.")
    _check(found, folder)
    return found


def _check(found: dict, folder: str) -> None:
    unknown = sorted(str(key) for key in found if key not in ALLOWED_KEYS)
    if unknown:
        raise SkillRefused(
            "allowed_keys",
            f"Unknown frontmatter keys: {', '.join(unknown)} (allowed: {', '.join(ALLOWED_KEYS)}).",
        )
    name = found.get("name")
    if not isinstance(name, str) or not 1 <= len(name) <= NAME_MAX or not NAME.match(name):
        raise SkillRefused(
            "name",
            f"name must be 1 to {NAME_MAX} lower-case letters, digits and single hyphens, not at either end.",
        )
    if folder and name != folder:
        raise SkillRefused(
            "name_matches_folder", f"name '{name}' must equal the skill folder's name, '{folder}'."
        )
    description = found.get("description")
    if not isinstance(description, str) or not 1 <= len(description.strip()) <= DESCRIPTION_MAX:
        raise SkillRefused("description", f"description must be 1 to {DESCRIPTION_MAX} characters.")
    compatibility = found.get("compatibility", "")
    if not isinstance(compatibility, str) or len(compatibility) > COMPATIBILITY_MAX:
        raise SkillRefused(
            "compatibility", f"compatibility must be text of at most {COMPATIBILITY_MAX} characters."
        )
    metadata = found.get("metadata", {})
    if not isinstance(metadata, dict) or not all(isinstance(k, str) for k in metadata):
        raise SkillRefused("metadata", "metadata must be a mapping from names to values.")
    for key in ("license", "allowed-tools"):
        if key in found and not isinstance(found[key], str):
            raise SkillRefused(key.replace("-", "_"), f"{key} must be text.")
