"""Skills where callers find servers: the dashboard's section (servers/views.py, through core/targets.py),
the skills the caller may see matching the dashboard's search text, with their approved version's
files, scan and where to fetch them."""

from __future__ import annotations

from django.db.models import Q

from servers import scanning
from skills.selectors import skills_visible

DASHBOARD_LIMIT = 200


def dashboard_section(principal, base_url: str, query: str = "") -> dict | None:
    rows = skills_visible(principal).order_by("path")
    if query:
        rows = rows.filter(Q(name__icontains=query) | Q(description__icontains=query))
    shown = [
        {
            "skill": skill,
            "files": len(skill.approved.files) if skill.approved else 0,
            "scan": _scan(skill),
            "download": f"{base_url}/api/skills/{skill.name}/files/SKILL.md",
            "pending": skill.approved is None,
        }
        for skill in rows[:DASHBOARD_LIMIT]
    ]
    return {"template": "skills/dashboard_section.html", "rows": shown} if shown else None


def _scan(skill) -> str:
    if skill.approved is None:
        return "not approved"
    return scanning.worst(skill.approved.findings) or "clean"
