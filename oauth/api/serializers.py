"""The shapes of the trusted identity providers' API (/api/trusted-issuers and the same under
/api/internal/): what an administrator sends and gets back. The fields' types are checked here; what
their values may say is the model's one rule (oauth/models.TrustedIssuer.clean), applied by the service."""

from rest_framework import serializers

from oauth.models import ALGORITHMS


class TrustedIssuerWriteSerializer(serializers.Serializer):
    issuer = serializers.CharField(max_length=500, help_text="its `iss`, exactly")
    jwks_url = serializers.CharField(
        max_length=500, required=False, allow_blank=True, default="", help_text="where its keys are published"
    )
    jwks = serializers.DictField(
        required=False, default=dict, help_text='its keys as a JWK Set: {"keys": [...]}'
    )
    algorithms = serializers.ListField(
        child=serializers.ChoiceField(choices=ALGORITHMS),
        required=False,
        default=list,
        max_length=len(ALGORITHMS),
        help_text="the algorithms it signs with; empty: RS256 and ES256",
    )
    user_claim = serializers.CharField(
        max_length=100, required=False, default="sub", help_text="the claim matched against the username"
    )
    is_enabled = serializers.BooleanField(required=False, default=True)


class TrustedIssuerSerializer(TrustedIssuerWriteSerializer):
    id = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class TrustedIssuerListSerializer(serializers.Serializer):
    issuers = TrustedIssuerSerializer(many=True)
