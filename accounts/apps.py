from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Users, groups, scopes, tokens and the audit trail."""

    name = "accounts"

    def ready(self):
        from accounts import cache

        cache.connect()
