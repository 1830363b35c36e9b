"""The one rule for a client's metadata, however it arrives: a dynamic registration (RFC 7591), its
update (RFC 7592) and a Client ID Metadata Document. django-oauth-toolkit stores redirect URIs space-
separated and reads them back by splitting, so the rule is applied to the URIs as they will be stored:
a URI holding whitespace or a control character is refused, never split into two.

- `redirect_uris`: 1 to OAUTH_MAX_REDIRECT_URIS strings, each a URI of an allowed scheme without a
  fragment; plain http only to a loopback host (RFC 8252); nothing else may come of them once stored.
- `grant_types`: `authorization_code` and `refresh_token` only; `response_types`: `code` only.
- Text fields (`client_name`, `client_uri`, …): strings of at most 255 characters, one line each.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from django.conf import settings

from core.untrusted import control_character_reason

LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
GRANT_TYPES = ("authorization_code", "refresh_token")
RESPONSE_TYPES = ("code",)
TEXT_FIELDS = (
    "client_name",
    "client_uri",
    "logo_uri",
    "tos_uri",
    "policy_uri",
    "software_id",
    "software_version",
    "scope",
    "token_endpoint_auth_method",
)
TEXT_MAX_LENGTH = 255
_WHITESPACE = re.compile(r"\s")


class ClientMetadataRefused(ValueError):
    """Metadata the registry will not store: `error` is the RFC 7591 code, `description` says why."""

    def __init__(self, description: str, error: str = "invalid_client_metadata"):
        super().__init__(description)
        self.error, self.description = error, description


def _redirect_uri_problem(uri) -> str | None:
    if not isinstance(uri, str) or not uri:
        return "Each redirect URI must be a non-empty string."
    if _WHITESPACE.search(uri) or control_character_reason(uri):
        return "A redirect URI may not hold whitespace or control characters."
    if len(uri) > 2048:
        return "A redirect URI may be at most 2048 characters."
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https", *settings.OAUTH_REDIRECT_SCHEMES):
        return f"The redirect URI scheme {scheme or '(none)'!r} is not allowed."
    if parts.fragment or "#" in uri:
        return "A redirect URI may not have a fragment."
    if scheme in ("http", "https") and not parts.hostname:
        return "An http(s) redirect URI needs a host."
    if scheme == "http" and parts.hostname not in LOOPBACK_HOSTS:
        return "An http redirect URI must be a loopback address (RFC 8252)."
    return None


def client_metadata_check(metadata: dict) -> None:
    """Refuse (ClientMetadataRefused) what the registry will not store of a client's `metadata`."""
    uris = metadata.get("redirect_uris")
    if not isinstance(uris, list) or not uris:
        raise ClientMetadataRefused("redirect_uris must be a non-empty array.", "invalid_redirect_uri")
    if len(uris) > settings.OAUTH_MAX_REDIRECT_URIS:
        raise ClientMetadataRefused(
            f"At most {settings.OAUTH_MAX_REDIRECT_URIS} redirect URIs.", "invalid_redirect_uri"
        )
    for uri in uris:
        if (problem := _redirect_uri_problem(uri)) is not None:
            raise ClientMetadataRefused(problem, "invalid_redirect_uri")
    if " ".join(uris).split() != uris:  # as stored, then read back
        raise ClientMetadataRefused("The redirect URIs do not survive being stored.", "invalid_redirect_uri")
    for name, allowed in (("grant_types", GRANT_TYPES), ("response_types", RESPONSE_TYPES)):
        values = metadata.get(name, [allowed[0]])
        if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
            raise ClientMetadataRefused(f"{name} must be an array of strings.")
        if refused := sorted(set(values) - set(allowed)):
            raise ClientMetadataRefused(
                f"{name} may name only {', '.join(allowed)}; not {', '.join(refused)[:200]}."
            )
    for name in TEXT_FIELDS:
        value = metadata.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise ClientMetadataRefused(f"{name} must be a string.")
        if len(value) > TEXT_MAX_LENGTH or control_character_reason(value):
            raise ClientMetadataRefused(f"{name} must be one line of at most {TEXT_MAX_LENGTH} characters.")
