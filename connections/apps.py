from django.apps import AppConfig


class ConnectionsConfig(AppConfig):
    """Each user's own credentials to upstream servers, sealed at rest, and the one resolver of the
    outbound headers for a caller, a server and a purpose."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "connections"
    label = "connections"

    def ready(self):
        from accounts import cache
        from connections import resolver
        from connections.models import UpstreamCredential
        from core.targets import TARGETS

        # A connection made, replaced or removed changes what the gateway sends for its user at once,
        # in every process (the gateway's header cache is keyed by the auth epoch).
        cache.watch(UpstreamCredential)
        TARGETS.discovery_headers = resolver.discovery_headers
