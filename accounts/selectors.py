"""Reads for accounts."""

from allauth.socialaccount.adapter import get_adapter as get_social_adapter
from django.contrib.auth.models import Group

from accounts.models import Scope
from accounts.services.scopes import GROUP_MAPPINGS_KEY, UI_SCOPES_KEY

PROVIDER_ICONS = {"keycloak": "keycloak", "cognito": "aws", "entra": "microsoft", "github": "github"}


def login_providers(request) -> list[dict]:
    """The identity providers configured from the environment: `{name, display_name, icon}`."""
    providers = {(p.sub_id or p.id): p for p in get_social_adapter().list_providers(request)}
    return [
        {"name": name, "display_name": providers[name].name, "icon": PROVIDER_ICONS.get(name, "openid")}
        for name in sorted(providers)
    ]


def scopes_document() -> dict:
    """Every scope and group mapping in the reference implementation's scopes.yml layout."""
    scopes = list(Scope.objects.order_by("name"))
    document: dict = {
        UI_SCOPES_KEY: {scope.name: scope.ui_permissions for scope in scopes if scope.ui_permissions},
        GROUP_MAPPINGS_KEY: {
            group.name: sorted(scope.name for scope in group.scopes.all())
            for group in Group.objects.order_by("name").prefetch_related("scopes")
            if group.scopes.all()
        },
    }
    for scope in scopes:
        if scope.server_rules:
            document[scope.name] = scope.server_rules
    return document
