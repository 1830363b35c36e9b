from django.db import models


class Visibility(models.TextChoices):
    """Who may see an agent: everyone, its owner (and admins), or members of its groups."""

    PUBLIC = "public", "Public"
    PRIVATE = "private", "Private"
    INTERNAL = "internal", "Internal"
