"""The token endpoint and the revocation endpoint of an upstream's authorization server, for a user's
sign-in there: the authorization code exchanged (PKCE verifier, RFC 8707 `resource`), a refresh (the new
refresh token kept when the server rotates it), and revocation (RFC 7009). For cross-app access, the two
requests of an identity assertion: its exchange at the identity provider (RFC 8693, for an ID-JAG) and its
presentation at the upstream's authorization server (RFC 7523 `jwt-bearer`). Requests are built by oauthlib,
answers read with the `mcp` SDK's OAuthToken, and everything goes through the sign-in's rule for outbound
fetches (connections/oauth/discovery.py `fetch_checked`: checked addresses, bounded, no redirects).

`values` is what a connection keeps sealed: the tokens and where they came from (`client_id`,
`client_secret`, `token_endpoint`, `revocation_endpoint`, `issuer`, `resource`)."""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import quote

from django.utils import timezone
from oauthlib.common import urlencode
from oauthlib.oauth2.rfc6749.parameters import prepare_token_request
from pydantic import ValidationError

from connections.oauth.discovery import UpstreamOAuthRefused, fetch_checked, first_problem
from core.untrusted import InputRejected, json_loads

logger = logging.getLogger(__name__)

ERROR_TEXT_MAX = 200


TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


class TokenRefused(Exception):
    """The authorization server refused the grant (`invalid_grant` and the like): the user signs in again.
    The message is safe to show; `error` is the OAuth error code it answered."""

    def __init__(self, message: str, error: str = ""):
        super().__init__(message)
        self.error = error


class TokenUnavailable(Exception):
    """The authorization server could not be reached or answered unusably: try again later."""


@dataclass(frozen=True)
class Grant:
    access_token: str
    refresh_token: str | None
    expires_at: datetime | None
    scopes: str


def exchange(values: dict, *, code: str, verifier: str, redirect_uri: str, registered: str) -> Grant:
    """The tokens for an authorization `code` (TokenRefused, TokenUnavailable)."""
    body = prepare_token_request(
        "authorization_code",
        include_client_id=not values.get("client_secret"),
        code_verifier=verifier,
        code=code,
        redirect_uri=redirect_uri,
        client_id=values["client_id"],
        resource=values["resource"],
    )
    return _token_request(values, body, registered)


def refresh(values: dict, *, registered: str) -> Grant:
    """New tokens for the connection's refresh token (TokenRefused when there is none or it is refused)."""
    if not values.get("refresh_token"):
        raise TokenRefused("The sign-in has expired and the server gave no refresh token.")
    body = prepare_token_request(
        "refresh_token",
        include_client_id=not values.get("client_secret"),
        refresh_token=values["refresh_token"],
        client_id=values["client_id"],
        resource=values["resource"],
    )
    grant = _token_request(values, body, registered)
    if grant.refresh_token is None:  # not rotated: the old one stays good
        grant = Grant(grant.access_token, values["refresh_token"], grant.expires_at, grant.scopes)
    return grant


def revoke(values: dict, *, registered: str) -> bool:
    """Revoke the connection's tokens at the upstream when it offers revocation (RFC 7009); best effort,
    whether it answered 200."""
    endpoint = values.get("revocation_endpoint")
    if not endpoint:
        return False
    revoked = True
    for hint in ("refresh_token", "access_token"):
        if not values.get(hint):
            continue
        pairs = [("token", values[hint]), ("token_type_hint", hint)]
        if not values.get("client_secret"):
            pairs.append(("client_id", values["client_id"]))
        try:
            answer = fetch_checked(
                endpoint,
                "the revocation endpoint",
                registered=registered,
                method="POST",
                body=urlencode(pairs).encode(),
                headers=_headers(values),
            )
        except UpstreamOAuthRefused as refused:
            logger.warning("Revoking a sign-in at %s failed: %s", values.get("issuer"), refused)
            return False
        revoked = revoked and answer.status == 200
    return revoked


def id_jag_exchange(
    values: dict,
    *,
    subject_token: str,
    subject_token_type: str,
    audience: str,
    resource: str,
    registered: str,
) -> str:
    """An identity assertion (ID-JAG) for `audience` (the authorization server's issuer) and `resource`,
    exchanged at the identity provider for the user's `subject_token` (TokenRefused, TokenUnavailable)."""
    pairs = [
        ("grant_type", TOKEN_EXCHANGE),
        ("requested_token_type", ID_JAG),
        ("audience", audience),
        ("resource", resource),
        ("subject_token", subject_token),
        ("subject_token_type", subject_token_type),
    ]
    if not values.get("client_secret"):
        pairs.append(("client_id", values["client_id"]))
    document = _answer(values, urlencode(pairs), registered)
    if document.get("issued_token_type") != ID_JAG or not isinstance(document.get("access_token"), str):
        raise TokenUnavailable("The identity provider's answer is not an identity assertion (ID-JAG).")
    return document["access_token"]


def jwt_bearer(values: dict, *, assertion: str, registered: str) -> Grant:
    """The access token an authorization server issues for an identity assertion (RFC 7523)."""
    pairs = [("grant_type", JWT_BEARER), ("assertion", assertion)]
    if not values.get("client_secret"):
        pairs.append(("client_id", values["client_id"]))
    return _grant(_answer(values, urlencode(pairs), registered))


def _headers(values: dict) -> dict[str, str]:
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
    if values.get("client_secret"):  # client_secret_basic (RFC 6749 §2.3.1: form-encoded, then Basic)
        pair = f"{quote(values['client_id'], safe='')}:{quote(values['client_secret'], safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    return headers


def _token_request(values: dict, body: str, registered: str) -> Grant:
    return _grant(_answer(values, body, registered))


def _answer(values: dict, body: str, registered: str) -> dict:
    """The token endpoint's JSON answer of 200 to `body` (TokenRefused with its error, TokenUnavailable)."""
    try:
        answer = fetch_checked(
            values["token_endpoint"],
            "the token endpoint",
            registered=registered,
            method="POST",
            body=body.encode(),
            headers=_headers(values),
        )
    except UpstreamOAuthRefused as refused:
        raise TokenUnavailable(str(refused)) from None
    try:
        document = json_loads(answer.body, "token answer")
    except InputRejected as rejected:
        raise TokenUnavailable(f"The token endpoint's answer is not usable: {rejected.message}") from None
    if answer.status in (400, 401) and isinstance(document, dict) and isinstance(document.get("error"), str):
        said = document.get("error_description")
        said = said if isinstance(said, str) else document["error"]
        raise TokenRefused(
            f"The authorization server refused: {said[:ERROR_TEXT_MAX]}", document["error"][:ERROR_TEXT_MAX]
        )
    if answer.status != 200 or not isinstance(document, dict):
        raise TokenUnavailable(f"The token endpoint answered {answer.status}.")
    return document


def _grant(document: dict) -> Grant:
    from mcp.shared.auth import OAuthToken  # here, not at the top: see connections/oauth/discovery.discover

    try:
        token = OAuthToken.model_validate(document)
    except ValidationError as invalid:
        raise TokenUnavailable(
            f"The token endpoint's answer is not valid: {first_problem(invalid, 'the answer')}."
        ) from None
    expires_at = timezone.now() + timedelta(seconds=token.expires_in) if token.expires_in else None
    return Grant(token.access_token, token.refresh_token, expires_at, token.scope or "")
