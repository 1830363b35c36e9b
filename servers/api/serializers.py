from rest_framework import serializers

from servers.models import Server


class InternalServerSerializer(serializers.ModelSerializer):
    """A server as the internal administration API lists it: everything but outbound headers."""

    class Meta:
        model = Server
        fields = [
            "path",
            "name",
            "description",
            "proxy_pass_url",
            "tags",
            "num_tools",
            "num_stars",
            "is_python",
            "license",
            "is_enabled",
            "health_status",
            "health_detail",
            "last_checked_at",
            "supported_transports",
            "auth_type",
            "auth_provider",
            "version",
        ]
