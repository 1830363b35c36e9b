"""Access tokens: registry-issued JWTs (simplejwt, HS256 with a key of their own) and, when configured,
an external OpenID issuer's JWTs verified against its published keys."""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache

import jwt
from django.conf import settings
from rest_framework_simplejwt.exceptions import TokenError
from rest_framework_simplejwt.tokens import AccessToken

__all__ = ["EncodedToken", "TokenError", "decode_external", "decode_registry", "encode", "issuer_of"]


@dataclass(frozen=True)
class EncodedToken:
    token: str
    jti: str
    expires_at: datetime


def encode(
    *,
    username: str,
    scopes,
    groups,
    admin: bool,
    lifetime: timedelta,
    kind: str,
    client_id: str | None = None,
    reach: dict | None = None,
) -> EncodedToken:
    """A signed access token carrying sub, scope (space-separated), groups, jti and exp, and the reach it
    is narrowed to (accounts/reach.py), if any."""
    token = AccessToken()
    token.set_exp(lifetime=lifetime)
    token["sub"] = username
    token["scope"] = " ".join(scopes)
    token["groups"] = list(groups)
    token["adm"] = bool(admin)
    token["kind"] = kind
    if client_id:
        token["client_id"] = client_id
    if reach is not None:
        token["reach"] = reach
    return EncodedToken(str(token), token["jti"], datetime.fromtimestamp(token["exp"], UTC))


def decode_registry(raw: str) -> dict:
    """Verify signature, issuer, expiry and type; raises TokenError."""
    return dict(AccessToken(raw).payload)


def issuer_of(raw: str) -> str | None:
    """The unverified `iss`, only to pick which verification applies; raises jwt.DecodeError."""
    return jwt.decode(raw, options={"verify_signature": False}).get("iss")


@lru_cache(maxsize=4)
def _jwks_client(issuer: str) -> jwt.PyJWKClient:
    url = f"{issuer.rstrip('/')}/.well-known/openid-configuration"
    with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 (operator-configured issuer)
        jwks_uri = json.load(response)["jwks_uri"]
    return jwt.PyJWKClient(jwks_uri, cache_keys=True, lifespan=300, timeout=5)


def decode_external(raw: str) -> dict:
    """Verify an OIDC_TOKEN_ISSUER token against the issuer's JWKS; raises jwt.PyJWTError or OSError."""
    key = _jwks_client(settings.OIDC_TOKEN_ISSUER).get_signing_key_from_jwt(raw)
    return jwt.decode(
        raw,
        key.key,
        algorithms=["RS256", "RS384", "RS512", "ES256", "ES384", "PS256"],
        audience=settings.OIDC_TOKEN_AUDIENCE,
        issuer=settings.OIDC_TOKEN_ISSUER,
        options={"require": ["exp", "iss", "aud", "sub"]},
    )
