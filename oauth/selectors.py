"""Reads of the authorization server: a presented token, a user's consents, and what a consent page
shows (the user's scopes and what each lets an application do at a resource)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from oauth2_provider.models import AccessToken, Application

from accounts.models import Scope, User
from accounts.principal import Principal, ServerRule
from accounts.selectors import login_providers_of
from oauth.models import Consent, TrustedIssuer
from oauth.resources import REGISTRY
from servers.models import Server


def access_token_of(raw: str) -> AccessToken | None:
    """The stored access token `raw` is (tokens are kept as SHA-256 checksums), with its user and app."""
    checksum = hashlib.sha256(raw.encode()).hexdigest()
    return AccessToken.objects.select_related("user", "application").filter(token_checksum=checksum).first()


def application_of(client_id: str) -> Application | None:
    return Application.objects.filter(client_id=client_id).first()


def consent_of(user: User, application: Application) -> Consent | None:
    return Consent.objects.filter(user=user, application=application).first()


def consents_of(user: User) -> list[Consent]:
    """The applications a user has authorized, most recently approved first."""
    return list(Consent.objects.filter(user=user).select_related("application"))


@dataclass(frozen=True)
class ScopeRights:
    """One of the user's scopes as the consent page shows it: what it allows at the resource."""

    name: str
    description: str
    grants: tuple[str, ...]  # e.g. "tools/call: get_forecast, get_alerts"


def _describe(rules: list[ServerRule]) -> tuple[str, ...]:
    lines = []
    for rule in rules:
        methods = "every method" if "*" in rule.methods else ", ".join(sorted(rule.methods))
        where = "every server" if rule.server == "*" else rule.server
        if "*" in rule.methods or "tools/call" in rule.methods:
            tools = "every tool" if "*" in rule.tools else ", ".join(sorted(rule.tools)) or "no tool"
            lines.append(f"{where}: {methods}; tools: {tools}")
        else:
            lines.append(f"{where}: {methods}")
    return tuple(lines)


def scopes_for_consent(principal: Principal, audience: str) -> list[ScopeRights]:
    """The user's scopes that grant anything at `audience` (a server path, or every scope for the
    registry), with what they grant there."""
    shown = []
    for scope in Scope.objects.filter(name__in=principal.scopes).order_by("name"):
        rules = [ServerRule.from_dict(raw) for raw in scope.server_rules if isinstance(raw, dict)]
        if audience != REGISTRY:
            rules = [rule for rule in rules if rule.server in ("*", audience)]
            if not rules:
                continue
        shown.append(ScopeRights(scope.name, scope.description, _describe(rules)))
    return shown


def tool_set_of(path: str) -> str | None:
    """The digest of the pinned tools of the server at `path` ("" before its first discovery), or None
    when no server is there (a virtual server, an agent, the registry)."""
    return Server.objects.filter(path=path).values_list("tool_set_digest", flat=True).first()


def user_of_assertion(issuer: TrustedIssuer, claims: dict, value: str) -> User | None:
    """The registry's user an identity provider's assertion names: the one whose login through that
    provider (an OpenID Connect login of the same issuer) has the assertion's `sub`, else the one whose
    username is the value of the issuer's user claim (for `email`, also the one user with that address).
    Active people only, never a service account."""
    people = User.objects.filter(is_active=True, is_service_account=False)
    subject = claims.get("sub")
    providers = login_providers_of(issuer.issuer)
    if providers and isinstance(subject, str) and subject:
        linked = people.filter(socialaccount__provider__in=providers, socialaccount__uid=subject).first()
        if linked is not None:
            return linked
    if not value:
        return None
    user = people.filter(username=value).first()
    if user is None and issuer.user_claim == "email":
        matching = list(people.filter(email__iexact=value)[:2])
        user = matching[0] if len(matching) == 1 else None
    return user
