"""Response shapes of the agent API (the A2A v1.0 AgentCard is built by agents.a2a.a2a_card)."""

from django.conf import settings
from rest_framework import serializers

from agents.api.serializers.fields import TagsField
from agents.cards import gateway_url
from agents.models import CARD_PROTOCOL_FIELDS, Agent


class AgentRegisteredSerializer(serializers.ModelSerializer):
    num_skills = serializers.IntegerField(read_only=True)

    class Meta:
        model = Agent
        fields = ["name", "path", "url", "num_skills", "registered_at", "is_enabled"]


class _OwnerMixin(serializers.Serializer):
    """The owner's username; null for anonymous callers, who should not learn account names."""

    owner = serializers.SerializerMethodField()

    def get_owner(self, agent: Agent) -> str | None:
        if not self.context.get("show_owner", True) or agent.owner is None:
            return None
        return agent.owner.get_username()


class _GatewayUrlMixin(serializers.Serializer):
    """Where callers reach the agent through the gateway (`/<path>/a2a`, gateway/a2a/); null when
    A2A_GATEWAY_URLS is off (the registry used for discovery only: callers use `url`)."""

    gateway_url = serializers.SerializerMethodField()

    def get_gateway_url(self, agent: Agent) -> str | None:
        base = self.context.get("base_url")
        return gateway_url(agent, base) if base is not None and settings.A2A_GATEWAY_URLS else None


class AgentListItemSerializer(_OwnerMixin, _GatewayUrlMixin, serializers.ModelSerializer):
    num_skills = serializers.IntegerField(read_only=True)
    tags = TagsField()

    class Meta:
        model = Agent
        fields = [
            "name",
            "path",
            "description",
            "url",
            "gateway_url",
            "version",
            "visibility",
            "is_enabled",
            "num_skills",
            "tags",
            "owner",
            "registered_at",
            "health_status",
            "last_checked_at",
        ]


class AgentCardOutSerializer(_OwnerMixin, _GatewayUrlMixin, serializers.ModelSerializer):
    """The full card in the registry's shape; every input field comes back under its input name, so a
    card read with GET can be sent back with PUT unchanged. `signed` says the card was published with
    JWS signatures and is served as published (`?format=a2a` and the gateway: agents/cards.py)."""

    num_skills = serializers.IntegerField(read_only=True)
    tags = TagsField()
    signed = serializers.SerializerMethodField()

    def get_signed(self, agent: Agent) -> bool:
        return agent.signed_card is not None

    class Meta:
        model = Agent
        fields = [
            "name",
            "description",
            "path",
            "url",
            "gateway_url",
            "version",
            "provider",
            "provider_organization",
            "provider_url",
            *CARD_PROTOCOL_FIELDS,
            "skills",
            "num_skills",
            "tags",
            "visibility",
            "license",
            "is_enabled",
            "owner",
            "registered_at",
            "updated_at",
            "signed",
            "health_status",
            "health_detail",
            "last_checked_at",
        ]
