"""Reads of the authorization server: a presented token, a user's consents, and what a consent page
shows (the user's scopes and what each lets an application do at a resource)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from oauth2_provider.models import AccessToken, Application

from accounts.models import Scope, User
from accounts.principal import Principal, ServerRule
from oauth.models import Consent
from oauth.resources import REGISTRY


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
