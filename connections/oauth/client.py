"""Who the registry is to an upstream's authorization server when it signs a user in there:

0. a client an operator entered for the issuer (UpstreamClient `entered`), when there is one;
1. the URL of its own Client ID Metadata Document (`CLIENT_DOCUMENT_PATH`, served by connections/views.py)
   when the server supports them and the registry's public URL is https (a client id is an https URL);
2. otherwise a client registered dynamically (RFC 7591) at the server's registration endpoint, once per
   issuer and redirect URI (UpstreamClient), its secret sealed when it got one.

Registration goes through the same rule as discovery (connections/oauth/discovery.py: checked
addresses, bounded answers, no redirects), and the answer is read with the `mcp` SDK's model."""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.db import IntegrityError
from pydantic import ValidationError

from connections.models import UpstreamClient
from connections.oauth.discovery import (
    UpstreamAuthorization,
    UpstreamOAuthRefused,
    fetch_checked,
    first_problem,
)
from core import sealing
from core.untrusted import InputRejected, json_loads

CLIENT_DOCUMENT_PATH = "/connections/oauth/client.json"
CALLBACK_PATH = "/connections/oauth/callback"
CLIENT_NAME = "MCP Gateway Registry"


@dataclass(frozen=True)
class ClientIdentity:
    client_id: str
    client_secret: str | None
    how: str  # "entered", "metadata document" or "registration"
    redirect_uri: str


def client_metadata(base: str) -> dict:
    """The registry's client metadata (RFC 7591), as its metadata document and its registrations say."""
    return {
        "client_id": f"{base}{CLIENT_DOCUMENT_PATH}",
        "client_name": CLIENT_NAME,
        "client_uri": base,
        "redirect_uris": [f"{base}{CALLBACK_PATH}"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }


def identity_for(authorization: UpstreamAuthorization, *, server_url: str, base: str) -> ClientIdentity:
    """How the registry names itself to `authorization`'s server; UpstreamOAuthRefused when it cannot."""
    entered = UpstreamClient.objects.filter(issuer=authorization.issuer, entered=True).first()
    if entered is not None:
        return _identity(entered, "entered")
    redirect_uri = f"{base}{CALLBACK_PATH}"
    if authorization.client_id_metadata_document_supported and base.startswith("https://"):
        return ClientIdentity(f"{base}{CLIENT_DOCUMENT_PATH}", None, "metadata document", redirect_uri)
    stored = UpstreamClient.objects.filter(issuer=authorization.issuer, redirect_uri=redirect_uri).first()
    if stored is None:
        stored = _register(authorization, server_url=server_url, base=base)
    return _identity(stored, "registration")


def _identity(stored: UpstreamClient, how: str) -> ClientIdentity:
    return ClientIdentity(stored.client_id, client_secret_of(stored), how, stored.redirect_uri)


def client_secret_of(stored: UpstreamClient) -> str | None:
    """The registry's secret as that client, if it has one (UpstreamOAuthRefused when it no longer opens)."""
    if not stored.sealed_secret:
        return None
    try:
        return sealing.unseal(stored.sealed_secret, context=client_context(stored)).decode()
    except sealing.Unsealable:
        raise UpstreamOAuthRefused(
            f"The registry's client secret at {stored.issuer} no longer opens: enter it again."
        ) from None


def client_secret_sealed(*, issuer: str, redirect_uri: str, secret: str) -> str:
    """A client secret of the registry at `issuer`, sealed for its UpstreamClient row."""
    if not secret:
        return ""
    return sealing.seal(secret.encode(), context=_context(issuer, redirect_uri))


def client_context(stored: UpstreamClient) -> str:
    return _context(stored.issuer, stored.redirect_uri)


def _register(authorization: UpstreamAuthorization, *, server_url: str, base: str) -> UpstreamClient:
    if not authorization.registration_endpoint:
        raise UpstreamOAuthRefused(
            f"The authorization server {authorization.issuer} accepts neither client metadata documents "
            "(at an https address of the registry) nor dynamic registration."
        )
    metadata = {key: value for key, value in client_metadata(base).items() if key != "client_id"}
    answer = fetch_checked(
        authorization.registration_endpoint,
        "the registration endpoint",
        registered=server_url,
        method="POST",
        body=json.dumps(metadata).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )
    try:
        document = json_loads(answer.body, "registration")
    except InputRejected as rejected:
        raise UpstreamOAuthRefused(f"The registration answer is not usable: {rejected.message}") from None
    if answer.status not in (200, 201):
        said = (
            document.get("error_description") or document.get("error") if isinstance(document, dict) else None
        )
        raise UpstreamOAuthRefused(
            f"The authorization server refused the registration ({answer.status}): {said}."
        )
    from mcp.shared.auth import OAuthClientInformationFull  # here: see connections/oauth/discovery.discover

    try:
        registered = OAuthClientInformationFull.model_validate(document)
    except ValidationError as invalid:
        raise UpstreamOAuthRefused(
            f"The registration answer is not valid: {first_problem(invalid, 'the answer')}."
        ) from None
    if not registered.client_id:
        raise UpstreamOAuthRefused("The registration answer names no client_id.")
    redirect_uri = metadata["redirect_uris"][0]
    secret = registered.client_secret or ""
    sealed = client_secret_sealed(issuer=authorization.issuer, redirect_uri=redirect_uri, secret=secret)
    try:
        return UpstreamClient.objects.create(
            issuer=authorization.issuer,
            redirect_uri=redirect_uri,
            client_id=registered.client_id,
            sealed_secret=sealed,
        )
    except IntegrityError:  # another process registered at the same moment: use theirs
        return UpstreamClient.objects.get(issuer=authorization.issuer, redirect_uri=redirect_uri)


def _context(issuer: str, redirect_uri: str) -> str:
    return f"upstream-client|{issuer}|{redirect_uri}"
