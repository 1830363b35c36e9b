from django.db import models


class VersionStatus(models.TextChoices):
    """Where a version of a skill stands: what every surface serves is the approved one."""

    APPROVED = "approved", "Approved"
    PENDING = "pending", "Awaiting approval"
    BLOCKED = "blocked", "Blocked"


class Source(models.TextChoices):
    UPLOAD = "upload", "Uploaded archive"
    GIT = "git", "Git repository"
    MIRROR = "mirror", "Mirrored from an MCP server"
