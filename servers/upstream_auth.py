"""How a target's upstream authentication mode is set (a server's or an A2A agent's), one rule for every
surface (the model's `clean`, so the console, the internal API and the dashboard's forms all say the same).

- `none`: nothing is added.
- `shared_headers`: the server's `headers`, the operator's credential, go with every caller's traffic.
- `user_secret`: each user connects their own API key or personal access token (connections/), sent
  in the one header `user_secret_header` names, e.g. `Authorization: Bearer {secret}` or
  `X-API-Key: {secret}`.
- `user_oauth`: each user signs in at the server's own authorization server (connections/oauth/)
  and their access token goes as `Authorization: Bearer`; the server must be https (http only on a
  loopback host with UPSTREAM_OAUTH_ALLOW_LOOPBACK, for development)."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from django.conf import settings

from servers.choices import SIGN_IN_MODES, UpstreamAuth

PLACEHOLDER = "{secret}"
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$")  # an RFC 9110 token
FORBIDDEN_NAMES = frozenset(
    {"host", "content-length", "content-type", "mcp-session-id", "mcp-protocol-version"}
)


class CredentialMissing(Exception):
    """A request (or a health check) needs a credential that is not there or no longer usable.
    `connect_path` is where the caller makes one (None when they cannot: a service account, a caller
    without a registry account, the registry's own discovery)."""

    def __init__(self, server_path: str, message: str, connect_path: str | None):
        super().__init__(message)
        self.server_path = server_path
        self.connect_path = connect_path


class CredentialUnavailable(Exception):
    """A credential exists but cannot be made usable right now (its authorization server did not answer a
    refresh): the request fails, the connection stays."""


def secret_header_problem(value: str) -> str | None:
    """Why `value` is not a usable `Name: template` with `{secret}` once in the template, or None."""
    name, sep, template = value.partition(":")
    name, template = name.strip(), template.strip()
    if not sep or not HEADER_NAME.match(name):
        return 'Write the header as "Name: value", e.g. "Authorization: Bearer {secret}".'
    if name.lower() in FORBIDDEN_NAMES:
        return f"The gateway sets {name} itself; choose another header."
    if template.count(PLACEHOLDER) != 1:
        return "The value must hold {secret} exactly once, where the user's secret goes."
    if any(c in template for c in "\r\n\0"):
        return "The value cannot contain line breaks."
    return None


def secret_header(value: str, secret: str) -> dict[str, str]:
    """The outbound header carrying `secret`, from a `user_secret_header` that passed the rule."""
    name, _, template = value.partition(":")
    return {name.strip(): template.strip().replace(PLACEHOLDER, secret)}


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def mode_problems(
    *, mode: str, headers: bool, secret_header_value: str, url: str = "", url_field: str = "proxy_pass_url"
) -> dict[str, str]:
    """The problems of a target's mode and the fields it needs (`headers`: whether it has shared headers),
    by field name."""
    problems = {}
    if mode in SIGN_IN_MODES and url:
        parts = urlsplit(url)
        loopback_http = settings.UPSTREAM_OAUTH_ALLOW_LOOPBACK and _loopback(parts.hostname or "")
        if parts.scheme != "https" and not loopback_http:
            problems[url_field] = "A target users sign in to must be reached over https."
    if mode == UpstreamAuth.CROSS_APP_ACCESS and not settings.CROSS_APP_ACCESS_ENABLED:
        problems["upstream_auth"] = (
            "Cross-app access needs CROSS_APP_ACCESS_ENABLED, so that users' identity-provider logins are "
            "kept for the exchange."
        )
    if mode == UpstreamAuth.SHARED_HEADERS and not headers:
        problems["headers"] = "Shared headers need at least one outbound header."
    if mode != UpstreamAuth.SHARED_HEADERS and headers:
        problems["headers"] = "Outbound headers are sent only in the shared headers mode."
    if mode == UpstreamAuth.USER_SECRET:
        if problem := secret_header_problem(secret_header_value or ""):
            problems["user_secret_header"] = problem
    return problems


def mode_settled(fields: dict, *, mode: str, headers: bool) -> dict:
    """A change's fields with the mode it implies when it names none (as before modes existed):
    outbound headers given → shared headers; every header removed from a shared-headers server → none.
    A change to another mode drops the shared headers it will no longer send (`headers`: whether the
    target has any now)."""
    fields = dict(fields)
    new_mode = fields.get("upstream_auth")
    if new_mode is None and "headers" in fields:
        if fields["headers"]:
            new_mode = UpstreamAuth.SHARED_HEADERS
        elif mode == UpstreamAuth.SHARED_HEADERS:
            new_mode = UpstreamAuth.NONE
        if new_mode is not None:
            fields["upstream_auth"] = new_mode
    if new_mode not in (None, UpstreamAuth.SHARED_HEADERS) and "headers" not in fields and headers:
        fields["headers"] = {}
    return fields
