"""What one health check found: made by the checker (servers/health.py), recorded by the services
(servers/services/health.py), so neither imports the other for it."""

from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone


@dataclass
class CheckResult:
    """What one health check found; `tools` is None when the check could not list them, `prompts` and
    `skills` when the server offers none or they could not be listed."""

    status: str
    detail: str
    tools: list[dict] | None = None
    prompts: list[dict] | None = None
    skills: list[dict] | None = None  # what the skills extension lists (servers/served_skills.py)
    checked_at: datetime = field(default_factory=timezone.now)
    elapsed_ms: int = 0
