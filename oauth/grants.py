"""The grants of the registry's authorization server beyond django-oauth-toolkit's: the JWT bearer grant
(RFC 7523) of an Identity Assertion JWT Authorization Grant (ID-JAG), the MCP enterprise-managed
authorization extension. A host exchanges its user's ID token at the company's identity provider for an
ID-JAG naming one of the registry's resources, and presents it here: no browser, no consent page; the
identity provider decided.

- The client authenticates as at any grant (its secret, or its id for a public client or a client ID
  metadata document); it need not have declared this grant when it registered.
- The assertion passes every check of oauth/id_jag.py; the user it names is an active person
  (oauth/selectors.user_of_assertion); each refusal is `invalid_grant` with its reason in the audit
  trail, never the assertion.
- The token is bound to the assertion's resource, carries the requested scopes the assertion grants (a
  scope beyond them is dropped; the answer's `scope` says what was granted) and no refresh token (the host
  asks the identity provider again). It is an application's token like a consented one
  (oauth/principals.py): the user's current rights, revocable, and refused once the server's tools
  change after the grant.

Wired as django-oauth-toolkit's OAUTH2_SERVER_CLASS (RegistryServer)."""

from __future__ import annotations

import json

from django.conf import settings
from django.db import transaction
from django.http import HttpRequest
from oauthlib.oauth2 import Server
from oauthlib.oauth2.rfc6749 import errors
from oauthlib.oauth2.rfc6749.grant_types.base import GrantTypeBase

from core.public_url import base_url
from oauth import selectors, services
from oauth.id_jag import AssertionRefused, id_jag_verified
from oauth.resources import Resource, our_origins

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ID_JAG_PROFILE = "urn:ietf:params:oauth:grant-profile:id-jag"


class _Rebuilt(HttpRequest):
    """The Django request an oauthlib request came from, rebuilt from the META it carries as its headers
    (django-oauth-toolkit rebuilds one the same way for its issuer), with the scheme it had."""

    def __init__(self, request):
        super().__init__()
        self.META = dict(request.headers)
        self.secure = bool(request.headers.get("X_DJANGO_OAUTH_TOOLKIT_SECURE"))

    def _get_scheme(self):
        return "https" if self.secure else "http"


def registry_of(request) -> tuple[str, set[str]]:
    """(the authorization server's issuer, the origins a resource of it may name) for an oauthlib
    request."""
    rebuilt = _Rebuilt(request)
    return base_url(rebuilt), our_origins(rebuilt)


def scopes_granted(requested: list[str], asserted: tuple[str, ...] | None, resource_scope: str) -> list[str]:
    """The scopes the token carries: those requested (by default the one the resource takes) that the
    assertion grants (all of ours when it names none) and that this authorization server knows."""
    ours = set(settings.OAUTH2_PROVIDER["SCOPES"])
    wanted = set(requested) or {resource_scope}
    allowed = set(asserted) if asserted is not None else ours
    return sorted(wanted & allowed & ours)


class IdJagGrant(GrantTypeBase):
    """`grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` with an ID-JAG as `assertion`."""

    def create_token_response(self, request, token_handler):
        headers = self._get_default_headers()
        try:
            self.validate_token_request(request)
        except errors.OAuth2Error as error:
            headers.update(error.headers)
            return headers, error.json, error.status_code
        token = token_handler.create_token(request, refresh_token=False)
        for modifier in self._token_modifiers:
            token = modifier(token)
        with transaction.atomic():  # the token and the consent it is judged by, together
            self.request_validator.save_token(token, request)
            services.assertion_granted(
                user=request.user,
                application=request.client,
                issuer=request.assertion_issuer,
                resource=request.resource[0],
                scopes=request.scopes,
            )
        return headers, json.dumps(token), 200

    def validate_token_request(self, request):
        for name in ("grant_type", "assertion", "scope", "resource"):
            if name in request.duplicate_params:
                raise errors.InvalidRequestError(description=f"Duplicate {name} parameter.", request=request)
        if request.grant_type != JWT_BEARER:
            raise errors.UnsupportedGrantTypeError(request=request)
        if not getattr(request, "assertion", None):
            raise errors.InvalidRequestError(description="Missing assertion.", request=request)
        self._authenticate(request)
        issuer, origins = registry_of(request)
        try:
            assertion = id_jag_verified(
                request.assertion, registry_issuer=issuer, origins=origins, client_id=request.client.client_id
            )
            asked = request.resource if isinstance(request.resource, str) else None
            if asked and asked != assertion.resource:
                raise AssertionRefused("The resource asked for is not the assertion's.")
            user = selectors.user_of_assertion(assertion.issuer, assertion.claims, assertion.user_value)
            if user is None:
                claim = assertion.issuer.user_claim
                raise AssertionRefused(
                    f"No active user of the registry is {claim} {assertion.user_value[:100]!r}."
                    if assertion.user_value
                    else f"The assertion has no {claim} to name the user by, nor a login's sub."
                )
            resource_scope = Resource(assertion.resource, assertion.audience).oauth_scope
            asserted = assertion.scopes if "scope" in assertion.claims else None
            scopes = scopes_granted(request.scopes or [], asserted, resource_scope)
            if resource_scope not in scopes:
                raise AssertionRefused(f"The assertion does not grant the scope {resource_scope}.")
        except AssertionRefused as refused:
            services.assertion_refused(client_id=request.client.client_id, reason=str(refused))
            raise errors.InvalidGrantError(description=str(refused), request=request) from None
        request.user = user
        request.scopes = scopes
        request.resource = [assertion.resource]
        request.assertion_issuer = assertion.issuer

    def _authenticate(self, request):
        """The client's own authentication, as at every grant of the token endpoint."""
        validator = self.request_validator
        if validator.client_authentication_required(request):
            if not validator.authenticate_client(request):
                raise errors.InvalidClientError(request=request)
        elif not validator.authenticate_client_id(request.client_id, request):
            raise errors.InvalidClientError(request=request)
        request.client_id = request.client_id or request.client.client_id


class RegistryServer(Server):
    """oauthlib's server with the ID-JAG grant beside the authorization code and refresh grants."""

    def __init__(self, request_validator, *args, **kwargs):
        super().__init__(request_validator, *args, **kwargs)
        self.grant_types[JWT_BEARER] = IdJagGrant(request_validator)
