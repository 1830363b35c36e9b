"""How an upstream MCP server (or A2A agent) wants each user to sign in, found the way an MCP client finds
it, and checked before anything of it is followed:

1. the server's 401 to an `initialize` without credentials names its protected-resource metadata
   (`WWW-Authenticate: Bearer resource_metadata=...`); without it, the RFC 9728 well-known URIs;
2. that document (RFC 9728) names the resource and its authorization servers;
3. the first authorization server's metadata: RFC 8414, with the OpenID discovery fallbacks.

The URLs to try and the documents' shapes are the `mcp` SDK's (its client does the same discovery); what
this module adds is the registry's rule for anything a party it does not run tells it to fetch:

- the authorization server: https only (http only to a loopback host, with UPSTREAM_OAUTH_ALLOW_LOOPBACK,
  for development), public addresses only or hosts on UPSTREAM_OAUTH_ALLOWED_HOSTS; the address checked
  is the one connected to (core/outbound.py), and no redirect is followed (the server's own origin is
  the operator's choice: it is reached as registered);
- the protected-resource metadata on the server's own origin, naming the server as its resource;
- the authorization server's `issuer` exactly the URL it was discovered by (RFC 8414 §3.3), its
  endpoints https too, and PKCE S256 offered;
- each document bounded in size and time, and read by the shared input rule.

A refusal says why in words an operator can act on (UpstreamOAuthRefused)."""

from __future__ import annotations

import json
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx2
from django.conf import settings
from pydantic import ValidationError

from core.outbound import AddressRefused, FetchFailed, addresses_to_reach, fetch
from core.public_url import origin_of
from core.targets import TargetKind
from core.untrusted import InputRejected, json_loads

DOCUMENT_MAX_BYTES = 64 * 1024
# What is sent without a credential to find out how a target wants its users to sign in, by its kind: an
# MCP server's `initialize`; an A2A agent's read of a task that no one has (it changes nothing either way).
PROBES = {
    TargetKind.SERVER: {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "mcp-gateway-registry", "version": "1"},
        },
    },
    TargetKind.AGENT: {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "sign-in-probe"}},
}


class UpstreamOAuthRefused(Exception):
    """The upstream's sign-in cannot be used; `str()` says why, safe to show an operator."""


@dataclass(frozen=True)
class UpstreamAuthorization:
    """What connecting a user to the server takes."""

    resource: str  # the resource the tokens are for (RFC 8707 `resource`)
    scopes: tuple[str, ...]  # the scopes the server names (its 401, else its metadata)
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str | None
    revocation_endpoint: str | None
    client_id_metadata_document_supported: bool
    iss_parameter_supported: bool


def discover(server_url: str, kind: str = TargetKind.SERVER) -> UpstreamAuthorization:
    """Find and check the sign-in of the MCP server (or the target of another `kind`: an A2A agent) at
    `server_url`; UpstreamOAuthRefused otherwise."""
    # The SDK's discovery, imported here: the mcp package costs most of a second at every process's start
    # (the console's admin imports this module through connections.services), and only discovery needs it.
    from mcp.client.auth.utils import (
        build_oauth_authorization_server_metadata_discovery_urls,
        build_protected_resource_metadata_discovery_urls,
        extract_resource_metadata_from_www_auth,
        extract_scope_from_www_auth,
    )
    from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata

    challenge = _probe(server_url, PROBES[kind])
    resource_metadata_url = extract_resource_metadata_from_www_auth(challenge) if challenge else None
    named_scope = extract_scope_from_www_auth(challenge) if challenge else None
    resource = _first_document(
        build_protected_resource_metadata_discovery_urls(resource_metadata_url, server_url),
        ProtectedResourceMetadata,
        "protected-resource metadata",
        same_origin_as=server_url,
        registered=server_url,
    )
    if origin_of(str(resource.resource)) != origin_of(server_url) or not server_url.startswith(
        str(resource.resource).rstrip("/")
    ):
        raise UpstreamOAuthRefused(
            f"The protected-resource metadata names {resource.resource} as its resource, not {server_url}."
        )
    issuer = str(resource.authorization_servers[0])
    metadata = _first_document(
        build_oauth_authorization_server_metadata_discovery_urls(issuer, server_url),
        OAuthMetadata,
        "authorization server metadata",
        same_origin_as=issuer,
        registered=server_url,
    )
    if str(metadata.issuer).rstrip("/") != issuer.rstrip("/"):
        raise UpstreamOAuthRefused(
            f"The authorization server's metadata names the issuer {metadata.issuer}, not {issuer} it was "
            "found by."
        )
    for name in ("authorization_endpoint", "token_endpoint", "registration_endpoint", "revocation_endpoint"):
        value = getattr(metadata, name)
        if value is not None and origin_of(str(value)) != origin_of(server_url):
            _check_url(str(value), name.replace("_", " "))
    if "S256" not in (metadata.code_challenge_methods_supported or []):
        raise UpstreamOAuthRefused("The authorization server does not offer PKCE with S256.")
    scopes = named_scope.split() if named_scope else (resource.scopes_supported or [])
    return UpstreamAuthorization(
        resource=str(resource.resource),
        scopes=tuple(scopes),
        issuer=str(metadata.issuer),
        authorization_endpoint=str(metadata.authorization_endpoint),
        token_endpoint=str(metadata.token_endpoint),
        registration_endpoint=str(metadata.registration_endpoint) if metadata.registration_endpoint else None,
        revocation_endpoint=str(metadata.revocation_endpoint) if metadata.revocation_endpoint else None,
        client_id_metadata_document_supported=bool(metadata.client_id_metadata_document_supported),
        iss_parameter_supported=bool(metadata.authorization_response_iss_parameter_supported),
    )


def _probe(server_url: str, probe: dict) -> httpx2.Response | None:
    """The target's 401 to `probe` without credentials (None when it answers otherwise)."""
    answer = fetch_checked(
        server_url,
        "the upstream",
        registered=server_url,
        method="POST",
        body=json.dumps(probe).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
    )
    if answer.status != 401:
        return None
    return httpx2.Response(401, headers={"WWW-Authenticate": answer.headers.get("WWW-Authenticate", "")})


def _first_document(urls: list[str], model, what: str, *, same_origin_as: str, registered: str):
    """The first of `urls` that answers 200 with a valid document; a refusal of any URL is final."""
    failures = []
    for url in urls:
        if origin_of(url) != origin_of(same_origin_as):
            raise UpstreamOAuthRefused(f"The {what} is at {url}, on another host than {same_origin_as}.")
        answer = fetch_checked(
            url, f"the {what}", registered=registered, headers={"Accept": "application/json"}
        )
        if answer.status != 200:
            failures.append(f"{url}: {answer.status}")
            continue
        try:
            return model.model_validate(json_loads(answer.body, what))
        except InputRejected as rejected:
            raise UpstreamOAuthRefused(f"The {what} at {url} is not usable: {rejected.message}") from None
        except ValidationError as invalid:
            raise UpstreamOAuthRefused(
                f"The {what} at {url} is not valid: {first_problem(invalid)}."
            ) from None
    raise UpstreamOAuthRefused(f"No {what} was found ({'; '.join(failures)}).")


def first_problem(invalid: ValidationError, whole: str = "the document") -> str:
    """The first problem a document model found, as "where: what" (where: the field's path, or `whole`)."""
    problem = invalid.errors()[0]
    where = ".".join(str(part) for part in problem["loc"]) or whole
    return f"{where}: {problem['msg']}"


def _check_url(url: str, what: str) -> tuple[str, int]:
    parts = urlsplit(url)
    loopback_http = parts.scheme == "http" and settings.UPSTREAM_OAUTH_ALLOW_LOOPBACK
    if parts.scheme != "https" and not loopback_http:
        raise UpstreamOAuthRefused(f"The {what} {url} is not https.")
    if not parts.hostname:
        raise UpstreamOAuthRefused(f"The {what} {url} names no host.")
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)


def fetch_checked(
    url: str, what: str, *, registered: str, method: str = "GET", body: bytes | None = None, headers=None
):
    """`url` fetched by the rule above (also for the registration and token requests of the sign-in);
    on the origin of the `registered` server URL, as registered."""
    if origin_of(url) == origin_of(registered):
        parts = urlsplit(url)
        hostname, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
        allowed, loopback = (hostname,), True
    else:
        hostname, port = _check_url(url, what.removeprefix("the "))
        allowed, loopback = settings.UPSTREAM_OAUTH_ALLOWED_HOSTS, settings.UPSTREAM_OAUTH_ALLOW_LOOPBACK
    try:
        addresses = addresses_to_reach(hostname, port, allowed_hosts=allowed, allow_loopback=loopback)
    except AddressRefused as refused:
        raise UpstreamOAuthRefused(f"{what.capitalize()} at {url} is not reachable: {refused}.") from None
    try:
        return fetch(
            url,
            deadline_seconds=settings.UPSTREAM_OAUTH_FETCH_TIMEOUT_SECONDS,
            max_bytes=DOCUMENT_MAX_BYTES,
            headers=headers,
            connect_to=addresses[0],
            ssl_context=ssl.create_default_context(),
            method=method,
            body=body,
        )
    except FetchFailed as failed:
        raise UpstreamOAuthRefused(f"{what.capitalize()} at {url} did not answer usably: {failed}.") from None
