"""Identity Assertion JWT Authorization Grants (ID-JAG, `typ: oauth-id-jag+jwt`), as the MCP
enterprise-managed authorization extension has a company's identity provider issue them, checked before
the registry's authorization server may exchange one for a token (RFC 7523 `jwt-bearer`). Each check
that fails raises AssertionRefused with the reason for the audit trail (never the assertion itself):

- `typ` is `oauth-id-jag+jwt`, the algorithm one the issuer is trusted with (never `none`);
- the issuer is a trusted one (oauth/models.TrustedIssuer), and its keys verify the signature;
- `aud` is the registry's issuer; `exp` is in the future and `iat` not, within MAX_LIFETIME_SECONDS;
- `resource` names one of the registry's gateway URLs (oauth/resources.py);
- `client_id` is the client authenticating; `sub` names someone;
- `jti` was never seen before for that issuer (kept until `exp` in Redis, across processes).

The JWT is read and verified by PyJWT (core/attestations.py uses it too), never by hand."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass

import jwt
from django.core.cache import cache

from connections.oauth.discovery import UpstreamOAuthRefused, fetch_checked
from core.redis_clients import sync_client
from oauth.models import TrustedIssuer
from oauth.resources import ResourceRefused, resource_of

TYPE = "oauth-id-jag+jwt"
DEFAULT_ALGORITHMS = ("RS256", "ES256")
MAX_LIFETIME_SECONDS = 600
LEEWAY_SECONDS = 30
JWKS_CACHE_SECONDS = 300
JWKS_REFETCH_SECONDS = 30
SEEN_KEY = "registry:oauth:id-jag-seen:"


class AssertionRefused(ValueError):
    """An ID-JAG the registry does not accept (OAuth `invalid_grant`); the text says why."""


@dataclass(frozen=True)
class IdJag:
    issuer: TrustedIssuer
    user_value: str  # the value of the issuer's user claim ("" when the assertion has none)
    resource: str
    audience: str  # the resource's server or agent path
    scopes: tuple[str, ...]
    claims: dict


def id_jag_verified(assertion: str, *, registry_issuer: str, origins: set[str], client_id: str) -> IdJag:
    """The ID-JAG in `assertion`, every check passed; AssertionRefused otherwise."""
    try:
        header = jwt.get_unverified_header(assertion)
        unverified = jwt.decode(assertion, options={"verify_signature": False})
    except jwt.PyJWTError:
        raise AssertionRefused("The assertion is not a JWT.") from None
    if header.get("typ") != TYPE:
        raise AssertionRefused(f"The assertion's typ is not {TYPE}.")
    issuer = TrustedIssuer.objects.filter(issuer=str(unverified.get("iss", "")), is_enabled=True).first()
    if issuer is None:
        raise AssertionRefused("The assertion's issuer is not a trusted identity provider.")
    algorithms = [alg for alg in (issuer.algorithms or DEFAULT_ALGORITHMS) if alg.lower() != "none"]
    if header.get("alg") not in algorithms:
        raise AssertionRefused(
            f"The assertion is signed with {str(header.get('alg'))[:20]}, not an allowed algorithm."
        )
    key = _key(issuer, header.get("kid"))
    try:
        claims = jwt.decode(
            assertion,
            key,
            algorithms=algorithms,
            audience=registry_issuer,
            issuer=issuer.issuer,
            leeway=LEEWAY_SECONDS,
            options={"require": ["exp", "iat", "jti", "aud", "iss"]},
        )
    except jwt.InvalidSignatureError:
        raise AssertionRefused("The assertion's signature does not verify with the issuer's keys.") from None
    except jwt.PyJWTError as invalid:
        raise AssertionRefused(f"The assertion is not valid: {invalid}.") from None
    if claims["exp"] - claims["iat"] > MAX_LIFETIME_SECONDS:
        raise AssertionRefused(f"The assertion lives longer than {MAX_LIFETIME_SECONDS} s.")
    if str(claims.get("client_id", "")) != client_id:
        raise AssertionRefused("The assertion was issued to another client.")
    try:
        resource = resource_of(str(claims.get("resource", "")), origins=origins)
    except ResourceRefused as refused:
        raise AssertionRefused(f"The assertion's resource is not one of this registry's: {refused}") from None
    if not isinstance(claims.get("sub"), str) or not claims["sub"]:
        raise AssertionRefused("The assertion has no sub.")
    user_value = claims.get(issuer.user_claim)
    _first_use(issuer, str(claims["jti"]), claims["exp"])
    scopes = tuple(str(claims.get("scope", "")).split())
    user_value = user_value if isinstance(user_value, str) else ""
    return IdJag(issuer, user_value, resource.url, resource.audience, scopes, claims)


def _first_use(issuer: TrustedIssuer, jti: str, expires: float) -> None:
    """Refuse a `jti` the issuer used before: kept until the assertion expires, across processes."""
    ttl = max(1, int(expires - time.time()) + LEEWAY_SECONDS)
    if not sync_client().set(f"{SEEN_KEY}{issuer.pk}:{jti[:200]}", "1", nx=True, ex=ttl):
        raise AssertionRefused("The assertion was used before (its jti).")


def _key(issuer: TrustedIssuer, kid):
    """The issuer's key with the assertion's `kid`: from its keys as given, or as fetched (kept
    JWKS_CACHE_SECONDS; fetched again for an unknown `kid`, a rotation, at most once a JWKS_REFETCH_SECONDS
    per issuer, so assertions with made-up kids cannot make the registry fetch on each)."""
    if issuer.jwks.get("keys"):
        found = _matching(issuer.jwks, kid)
    else:
        cache_key = f"oauth:id-jag-jwks:{issuer.pk}:{hashlib.sha256(issuer.jwks_url.encode()).hexdigest()}"
        keys = cache.get(cache_key)
        if keys is None:
            keys = _fetched_keys(issuer)
            cache.set(cache_key, keys, JWKS_CACHE_SECONDS)
        found = _matching(keys, kid)
        if found is None and cache.add(f"{cache_key}:refetched", 1, JWKS_REFETCH_SECONDS):
            keys = _fetched_keys(issuer)
            cache.set(cache_key, keys, JWKS_CACHE_SECONDS)
            found = _matching(keys, kid)
    if found is None:
        raise AssertionRefused("No key of the issuer has the assertion's kid.")
    return found


def _matching(keys: dict, kid):
    try:
        found = jwt.PyJWKSet.from_dict(keys)
    except jwt.PyJWTError:
        raise AssertionRefused("The issuer's keys cannot be read.") from None
    return next((key for key in found.keys if kid is None or key.key_id == kid), None)


def _fetched_keys(issuer: TrustedIssuer) -> dict:
    """The issuer's JWK Set from its `jwks_url`, fetched under the rule for what upstream identity
    services publish (connections/oauth/discovery.fetch_checked: https, checked addresses, bounded)."""
    if not issuer.jwks_url:
        raise AssertionRefused("The issuer has no keys configured.")
    try:
        keys = json.loads(fetch_checked(issuer.jwks_url, "the JWK Set", registered="").body)
    except (UpstreamOAuthRefused, ValueError) as failed:
        raise AssertionRefused(f"The issuer's keys could not be fetched: {failed}") from None
    if not isinstance(keys, dict):
        raise AssertionRefused("The issuer's keys are not a JWK Set.")
    return keys
