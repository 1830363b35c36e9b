"""django-oauth-toolkit's request validator with the registry's two additions (OAuth 2.1, RFC 7636):

- A PKCE `code_challenge` must be what S256 makes: 43 base64url characters. Checked where every
  authorization code is created, so no path to a code skips it.
- An authorization code is used once; presented again, the tokens its first exchange issued (the
  access token and its whole refresh family) are revoked. Which tokens a code gave is kept in the
  cache (as checksums) for as long as an access token lives.
"""

from __future__ import annotations

import hashlib
import re

from django.conf import settings
from django.core.cache import cache
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauthlib.oauth2.rfc6749 import errors

from oauth.services import code_replay_revoke

S256_CHALLENGE = re.compile(r"^[A-Za-z0-9_-]{43}$")


def code_challenge_problem(challenge: str | None) -> str | None:
    """Why `challenge` is not an S256 code challenge, or None."""
    if not challenge or not S256_CHALLENGE.match(challenge):
        return "code_challenge must be the S256 challenge of a verifier: 43 base64url characters."
    return None


def _code_key(code: str) -> str:
    return "oauth:code-tokens:" + hashlib.sha256(code.encode()).hexdigest()


class RegistryValidator(OAuth2Validator):
    def _create_authorization_code(self, request, code, expires=None):
        if (problem := code_challenge_problem(request.code_challenge)) is not None:
            raise errors.InvalidRequestError(description=problem, request=request)
        return super()._create_authorization_code(request, code, expires)

    def save_bearer_token(self, token, request, *args, **kwargs):
        saved = super().save_bearer_token(token, request, *args, **kwargs)
        if request.grant_type == "authorization_code" and request.code:
            checksum = hashlib.sha256(token["access_token"].encode()).hexdigest()
            cache.set(_code_key(request.code), checksum, timeout=settings.OAUTH_ACCESS_TOKEN_SECONDS)
        return saved

    def validate_code(self, client_id, code, client, request, *args, **kwargs):
        if super().validate_code(client_id, code, client, request, *args, **kwargs):
            return True
        checksum = cache.get(_code_key(code))
        if checksum is not None:
            code_replay_revoke(access_token_checksum=checksum, client_id=client_id)
            cache.delete(_code_key(code))
        return False
