"""Reads for accounts."""

from allauth.socialaccount.adapter import get_adapter as get_social_adapter
from django.conf import settings
from django.contrib.auth.models import Group
from django.db.models import Count
from django.utils import timezone

from accounts.choices import SYSTEM_GROUPS, TokenKind, group_scope_name
from accounts.idp_admin import IdpError, KeycloakAdmin
from accounts.models import IssuedToken, Scope
from accounts.services.scopes import GROUP_MAPPINGS_KEY, UI_SCOPES_KEY

MY_TOKENS_LIMIT = 100


def tokens_in_force(user) -> list[IssuedToken]:
    """The tokens `user` asked for that still work (neither expired nor revoked), newest first."""
    return list(
        IssuedToken.objects.filter(
            user=user, kind=TokenKind.USER, revoked_at__isnull=True, expires_at__gt=timezone.now()
        ).order_by("-created_at")[:MY_TOKENS_LIMIT]
    )


def token_revocable_by(principal, jti: str) -> IssuedToken | None:
    """The token `jti` names when `principal` may revoke it: its holder (a token they asked for), or an
    administrator (any token). None otherwise, so someone else's token is exactly like a missing one."""
    tokens = IssuedToken.objects.filter(jti=jti)
    if not principal.is_admin:
        if principal.user is None:
            return None
        tokens = tokens.filter(user=principal.user, kind=TokenKind.USER)
    return tokens.first()


PROVIDER_ICONS = {"keycloak": "keycloak", "cognito": "aws", "entra": "microsoft", "github": "github"}


def login_providers(request) -> list[dict]:
    """The identity providers configured from the environment: `{name, display_name, icon}`."""
    providers = {(p.sub_id or p.id): p for p in get_social_adapter().list_providers(request)}
    return [
        {"name": name, "display_name": providers[name].name, "icon": PROVIDER_ICONS.get(name, "openid")}
        for name in sorted(providers)
    ]


def _oidc_apps() -> list[dict]:
    """The configured OpenID Connect logins (allauth's apps: `provider_id`, `client_id`, `secret`,
    `settings` with the issuer as `server_url`)."""
    return settings.SOCIALACCOUNT_PROVIDERS.get("openid_connect", {}).get("APPS", [])


def oidc_app_of(provider: str) -> dict | None:
    """The configured OpenID Connect login `provider`, or None when it is not one."""
    return next((app for app in _oidc_apps() if app["provider_id"] == provider), None)


def oidc_issuer_of(provider: str) -> str | None:
    """The issuer of the OpenID Connect login `provider`, or None when it is not one."""
    app = oidc_app_of(provider)
    return app["settings"]["server_url"] if app is not None else None


def login_providers_of(issuer: str) -> list[str]:
    """The OpenID Connect logins (their provider ids, as users' provider links name them) configured for
    the identity provider whose issuer is `issuer`."""
    wanted = issuer.rstrip("/")
    return [app["provider_id"] for app in _oidc_apps() if app["settings"]["server_url"].rstrip("/") == wanted]


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


def _scope_row(scope: Scope) -> dict:
    return {
        "name": scope.name,
        "description": scope.description,
        "server_rules": scope.server_rules,
        "ui_permissions": scope.ui_permissions,
        "publish_names": scope.publish_names,
    }


def groups_overview(*, include_scopes: bool = True, include_idp: bool = True) -> dict:
    """Every registry group with its members count, identity-provider mappings and (optionally) scopes;
    with the identity provider consulted, each group's `sync_status` and the groups only it has.

    An identity provider that fails is reported in `idp_error`; the registry's groups are still listed."""
    groups = (
        Group.objects.annotate(members_count=Count("user", distinct=True))
        .prefetch_related("idp_mappings", "scopes")
        .order_by("name")
    )
    idp = KeycloakAdmin.from_settings()
    idp_names, idp_error = None, None
    if include_idp and idp is not None:
        try:
            idp_names = idp.group_names()
        except IdpError as exc:
            idp_error = str(exc)
    rows, matched = [], set()
    for group in groups:
        mapped = sorted(mapping.idp_group for mapping in group.idp_mappings.all())
        own = next((s for s in group.scopes.all() if s.name == group_scope_name(group.name)), None)
        status = None
        if idp_names is not None:
            known = {group.name, *mapped} & idp_names
            matched |= known
            status = "synchronized" if known else "registry_only"
        row = {
            "name": group.name,
            "description": own.description if own else "",
            "system": group.name in SYSTEM_GROUPS,
            "members_count": group.members_count,
            "idp_groups": mapped,
            "sync_status": status,
        }
        if include_scopes:
            row["scopes"] = [_scope_row(scope) for scope in sorted(group.scopes.all(), key=lambda s: s.name)]
        rows.append(row)
    for name in sorted((idp_names or set()) - matched):
        row = {
            "name": name,
            "description": "",
            "system": False,
            "members_count": 0,
            "idp_groups": [],
            "sync_status": "idp_only",
        }
        if include_scopes:
            row["scopes"] = []
        rows.append(row)
    rows.sort(key=lambda row: row["name"])
    return {"groups": rows, "idp_configured": idp is not None, "idp_error": idp_error}
