from django.db import models


class Status(models.TextChoices):
    """The lifecycle of a published version (the official registry's `status`)."""

    ACTIVE = "active", "Active"
    DEPRECATED = "deprecated", "Deprecated"
    DELETED = "deleted", "Deleted"


class Origin(models.TextChoices):
    PUBLISHED = "published", "Published here"
    MIRRORED = "mirrored", "Mirrored from an upstream"
