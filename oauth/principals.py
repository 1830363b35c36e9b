"""Presented access tokens of the authorization server, as principals (the bearer resolver
accounts/authentication.py calls through settings.BEARER_TOKEN_RESOLVERS)."""

from __future__ import annotations

from dataclasses import replace

from rest_framework import exceptions

from accounts.choices import AuthMethod
from accounts.principal import REGISTRY, Principal, principal_for_user
from accounts.reach import ANY, Reach
from oauth.resources import audience_of_resource
from oauth.selectors import access_token_of, consent_of, tool_set_of
from oauth.tokens import is_access_token


def consent_reach(consent, audience: str) -> Reach | None:
    """What an application's tokens at `audience` are narrowed to: the tools chosen at that server, and
    all of the user's rights without administration reach only that server (at the registry, every
    server); a consent that administers is not narrowed."""
    if consent.administers:
        return None
    tools = consent.tools.get(audience) if isinstance(consent.tools, dict) else None
    if consent.all_rights:
        return Reach.of(ANY if audience == REGISTRY else audience, tools or [ANY])
    return Reach.of(audience, tools) if tools and audience != REGISTRY else None


def principal_from_access_token(raw: str) -> tuple[Principal, float | None] | None:
    """The principal of an authorized application's token and when it expires: the user's rights narrowed
    to what the user consented to, usable only at the resource it was issued for. None when `raw` is not
    such a token (settings.BEARER_TOKEN_RESOLVERS: accounts/authentication.py asks each resolver)."""
    if not is_access_token(raw):
        return None
    token = access_token_of(raw)
    if token is None:
        raise exceptions.AuthenticationFailed("The token has been revoked.", code="token_revoked")
    if token.is_expired():
        raise exceptions.AuthenticationFailed("The token has expired.", code="token_expired")
    user = token.user
    consent = consent_of(user, token.application) if user is not None else None
    if user is None or not user.is_active or consent is None:
        raise exceptions.AuthenticationFailed("The token has been revoked.", code="token_revoked")
    audience = audience_of_resource(token.resource[0]) if len(token.resource or []) == 1 else None
    if audience is None:
        raise exceptions.AuthenticationFailed("The token names no resource.", code="token_invalid")
    if (
        consent.issuer
        and consent.tool_sets.get(audience)
        and (tool_set_of(audience) != consent.tool_sets[audience])
    ):
        raise exceptions.AuthenticationFailed(
            f"The tools of {audience} changed since your identity provider granted this token: ask it "
            "for a new assertion.",
            code="grant_outdated",
        )
    principal = principal_for_user(
        user,
        auth_method=AuthMethod.APPLICATION,
        client_id=token.application.client_id,
        token_scopes=None if consent.all_rights else consent.scopes,
        token_admin=consent.administers,
        reach=consent_reach(consent, audience),
    )
    bound = replace(principal, audience=audience, oauth_scopes=frozenset(token.scope.split()))
    return bound, token.expires.timestamp()
