from django.db import models


class CallerKind(models.TextChoices):
    """Who a limit or a quarantine is about. A group's limit counts each member on its own."""

    USER = "user", "User or service account"
    GROUP = "group", "Every member of a group"
    APPLICATION = "application", "OAuth application (client id)"


class TargetKind(models.TextChoices):
    """What a limit or a quarantine is about: a target of the gateway by its path, or every server with a
    tag."""

    SERVER = "server", "Server"
    VIRTUAL_SERVER = "virtual_server", "Virtual server"
    AGENT = "agent", "A2A agent"
    TAG = "tag", "Every server with a tag"


class Counted(models.TextChoices):
    """What a limit counts: calls of tools, prompts and resources, and A2A messages (listing and session
    upkeep never count)."""

    TOOLS = "tools", "tools/call"
    PROMPTS = "prompts", "prompts/get"
    RESOURCES = "resources", "resources/read"
    A2A = "a2a", "A2A messages"


# A window's name -> its length in seconds.
WINDOWS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
