"""Presented access tokens of the authorization server, as principals (the bearer resolver
accounts/authentication.py calls through settings.BEARER_TOKEN_RESOLVERS)."""

from __future__ import annotations

from dataclasses import replace

from rest_framework import exceptions

from accounts.choices import AuthMethod
from accounts.principal import Principal, principal_for_user
from oauth.resources import audience_of_resource
from oauth.selectors import access_token_of, consent_of
from oauth.tokens import is_access_token


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
    principal = principal_for_user(
        user,
        auth_method=AuthMethod.APPLICATION,
        client_id=token.application.client_id,
        token_scopes=None if consent.all_rights else consent.scopes,
        token_admin=consent.all_rights,
    )
    bound = replace(principal, audience=audience, oauth_scopes=frozenset(token.scope.split()))
    return bound, token.expires.timestamp()
