"""Query strings and small bodies of the agent API's list, card and toggle routes."""

from rest_framework import serializers

from agents.choices import Visibility


class AgentListQuerySerializer(serializers.Serializer):
    query = serializers.CharField(required=False, allow_blank=True, trim_whitespace=True, default="")
    enabled_only = serializers.BooleanField(required=False, default=False)
    visibility = serializers.ChoiceField(choices=Visibility.choices, required=False, allow_blank=True)


class AgentCardQuerySerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=["a2a"], required=False)


class ToggleQuerySerializer(serializers.Serializer):
    enabled = serializers.BooleanField()
