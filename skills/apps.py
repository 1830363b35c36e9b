from django.apps import AppConfig


class SkillsConfig(AppConfig):
    """Agent Skills (agentskills.io): folders with a SKILL.md and their scripts, references and assets,
    published from archives or Git, or mirrored from MCP servers, every file scanned, each version pinned
    (docs/skills.md)."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "skills"
    label = "skills"

    def ready(self):
        from core import attestations
        from core.targets import TARGETS, TargetKind
        from skills.listing import dashboard_section
        from skills.models import Skill
        from skills.selectors import attestation_of_content

        TARGETS.exists[TargetKind.SKILL] = lambda path: Skill.objects.filter(path=path).exists()
        TARGETS.dashboard_sections.append(dashboard_section)
        TARGETS.skills_listed = _skills_listed
        attestations.FINDERS.append(attestation_of_content)


def _skills_listed(server, entries):
    from skills.mirroring import skills_listed  # the MCP client stack: health-check workers only

    return skills_listed(server, entries)
