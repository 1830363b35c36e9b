from django.conf import settings
from rest_framework import serializers


class TokenRequestSerializer(serializers.Serializer):
    """POST /api/tokens/generate: what the token may do (one server and chosen tools, chosen scopes, or
    by default everything the caller may do but administer), for how long, and why."""

    requested_scopes = serializers.ListField(
        child=serializers.CharField(max_length=150), required=False, allow_empty=False, max_length=100
    )
    expires_in_hours = serializers.IntegerField(required=False, min_value=1)
    description = serializers.CharField(required=False, allow_blank=True, max_length=200, default="")
    server = serializers.CharField(
        required=False, max_length=256, help_text="narrow the token to this server's path"
    )
    tools = serializers.ListField(
        child=serializers.CharField(max_length=200),
        required=False,
        max_length=500,
        help_text="and to these of its tools (default: every tool the caller may call there)",
    )
    admin = serializers.BooleanField(
        required=False, default=False, help_text="a token that administers (administrators, asked explicitly)"
    )

    def validate_expires_in_hours(self, value):
        if value > settings.TOKEN_MAX_HOURS:
            raise serializers.ValidationError(f"At most {settings.TOKEN_MAX_HOURS} hours.")
        return value


class ClientCredentialsSerializer(serializers.Serializer):
    """POST /api/auth/token (form or JSON); the client may authenticate with Basic instead of the body."""

    grant_type = serializers.CharField(max_length=64)
    client_id = serializers.CharField(max_length=80, required=False)
    client_secret = serializers.CharField(max_length=200, required=False, trim_whitespace=False)
