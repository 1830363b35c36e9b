from django.db import models


class Purpose(models.TextChoices):
    """What a stored credential is used for: a user's own calls, or the registry's discovery (health
    checks and tool discovery of a server that needs each user's credential)."""

    USER = "user", "A user's calls"
    DISCOVERY = "discovery", "Health checks and tool discovery"
