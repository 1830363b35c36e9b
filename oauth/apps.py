from django.apps import AppConfig


class OauthConfig(AppConfig):
    """The registry as the OAuth 2.1 authorization server of its gateway, for MCP hosts."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "oauth"
    label = "oauth"

    def ready(self):
        from oauth2_provider.models import AccessToken, Application

        from accounts import cache, last_used
        from oauth.models import Consent
        from oauth.services import consents_used

        # Revoking (RFC 7009), rotating or expiring a token deletes its row; a consent narrows or ends
        # what every token of its application may do.
        cache.watch(AccessToken)
        cache.watch(Application, saves=False)
        cache.watch(Consent)
        last_used.register(last_used.APPLICATION, consents_used)
