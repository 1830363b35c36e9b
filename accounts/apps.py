from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Users, groups, scopes, tokens and the audit trail."""

    name = "accounts"
