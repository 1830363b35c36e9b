"""Shapes of the agent API. Input serializers validate shape only (services own the rules).

`card` validates an agent card in any of its three shapes, `output` shapes responses, `query` and
`discover` read query strings and small bodies; the A2A mapping itself lives in agents.a2a. Every name
is re-exported here, so `from agents.api.serializers import ...` keeps working.
"""

from agents.a2a import a2a_card
from agents.api.serializers.card import AgentCardSerializer
from agents.api.serializers.discover import DiscoverQuerySerializer, DiscoverSerializer
from agents.api.serializers.fields import HttpUrlField, ReaderField, StrictCharField, TagsField
from agents.api.serializers.output import (
    AgentCardOutSerializer,
    AgentListItemSerializer,
    AgentRegisteredSerializer,
)
from agents.api.serializers.query import (
    AgentCardQuerySerializer,
    AgentListQuerySerializer,
    ToggleQuerySerializer,
)

__all__ = [
    "AgentCardOutSerializer",
    "AgentCardQuerySerializer",
    "AgentCardSerializer",
    "AgentListItemSerializer",
    "AgentListQuerySerializer",
    "AgentRegisteredSerializer",
    "DiscoverQuerySerializer",
    "DiscoverSerializer",
    "HttpUrlField",
    "ReaderField",
    "StrictCharField",
    "TagsField",
    "ToggleQuerySerializer",
    "a2a_card",
]
