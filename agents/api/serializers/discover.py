"""Query string and body of POST /api/agents/discover."""

from rest_framework import serializers

from agents.api.serializers.fields import StrictCharField
from agents.selectors import DISCOVER_DEFAULT_RESULTS, DISCOVER_MAX_RESULTS


class DiscoverQuerySerializer(serializers.Serializer):
    max_results = serializers.IntegerField(
        required=False, default=DISCOVER_DEFAULT_RESULTS, min_value=1, max_value=DISCOVER_MAX_RESULTS
    )


class DiscoverSerializer(serializers.Serializer):
    """`skills` (required, at least one) and `tags` (optional): lists of strings, at most 50 each."""

    skills = serializers.ListField(child=StrictCharField(max_length=200), allow_empty=False, max_length=50)
    tags = serializers.ListField(
        child=StrictCharField(max_length=64), required=False, default=list, max_length=50
    )
