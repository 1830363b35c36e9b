"""A server users sign in to (user OAuth, or cross-app access with their company identity) refusing the
caller's sign-in: a 401 (asking for a stronger login, `insufficient_user_authentication`, or not), or a
403 whose challenge asks for more scope (`insufficient_scope`, with the scope it wants). Seen before
anything of the answer reaches the client, so the gateway can refresh and try once more, or ask the
caller to sign in again (gateway/app.py)."""

from __future__ import annotations

import re

from mcp.client.auth.utils import extract_scope_from_www_auth

from connections.cross_app import LOGIN_PATH
from connections.resolver import connect_path
from servers.choices import SIGN_IN_MODES, UpstreamAuth
from servers.upstream_auth import CredentialMissing

SCOPE_MAX_LENGTH = 500
SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")  # RFC 6749 §3.3


class SignInRefused(Exception):
    """The server refused a caller's sign-in (user OAuth): 401, or 403 asking for more `scope`. Raised
    before anything of the answer reaches the client, so the request can be tried again or asked for."""

    def __init__(self, status: int, scope: str, stronger_login: bool = False):
        super().__init__(f"refused with {status}")
        self.status, self.scope, self.stronger_login = status, scope, stronger_login

    def missing(self, server) -> CredentialMissing:
        if server.upstream_auth == UpstreamAuth.CROSS_APP_ACCESS:
            return CredentialMissing(
                server.path,
                f"{server.path} refused the token your company identity was exchanged for: log in to the "
                "registry again, then try again.",
                LOGIN_PATH,
            )
        return CredentialMissing(
            server.path,
            f"{server.path} refused your sign-in: sign in again, then try again.",
            connect_path(server),
        )


def sign_in_refused(server, response) -> SignInRefused | None:
    """Whether the answer refuses the caller's sign-in (only for servers users sign in to)."""
    if server.upstream_auth not in SIGN_IN_MODES or response.status not in (401, 403):
        return None
    if response.status == 403 and "insufficient_scope" not in response.headers.get("WWW-Authenticate", ""):
        return None  # a refusal of the call itself, which the client sees as it is
    challenge = response.headers.get("WWW-Authenticate", "")
    named = (extract_scope_from_www_auth(response) or "")[:SCOPE_MAX_LENGTH]
    stronger = response.status == 401 and "insufficient_user_authentication" in challenge
    return SignInRefused(response.status, " ".join(SCOPE_TOKEN.findall(named)), stronger)
