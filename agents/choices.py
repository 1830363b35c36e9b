from django.db import models

from core.visibility import Visibility  # noqa: F401 (agents' visibility is the one rule's)


class Provider(models.TextChoices):
    """Who built the agent. The interface names "a vendor-named value, `custom`, `other`"; a closed list
    keeps filters and facets meaningful. Values are matched case-insensitively on input; the label is the
    organization an A2A card shows when the card gave none of its own."""

    ANTHROPIC = "anthropic", "Anthropic"
    OPENAI = "openai", "OpenAI"
    GOOGLE = "google", "Google"
    MICROSOFT = "microsoft", "Microsoft"
    AWS = "aws", "AWS"
    META = "meta", "Meta"
    MISTRAL = "mistral", "Mistral AI"
    COHERE = "cohere", "Cohere"
    IBM = "ibm", "IBM"
    SALESFORCE = "salesforce", "Salesforce"
    CUSTOM = "custom", "Custom"  # built by the publisher itself
    OTHER = "other", "Other"  # any organization not listed above


# The A2A transport assumed for an agent's main `url` when its card names none (A2A v0.3's default).
DEFAULT_TRANSPORT = "JSONRPC"
