"""Turning credentials into a Principal: bearer tokens, sessions and internal Basic credentials.

Identity comes only from a verified token, session or Basic credential; `X-User`, `X-Scopes` and any
other identity header a client sends is ignored everywhere.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import logging
import time
from dataclasses import replace
from importlib import import_module
from types import SimpleNamespace

import jwt
from django.conf import settings
from django.contrib.auth import get_user
from django.utils.module_loading import import_string
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, SessionAuthentication

from accounts.cache import PRINCIPALS, token_key
from accounts.choices import AuthMethod, TokenKind
from accounts.last_used import USES
from accounts.models import ClientCredential, IssuedToken, User
from accounts.principal import (
    ANONYMOUS,
    REGISTRY,
    Principal,
    principal_for_idp_groups,
    principal_for_public,
    principal_for_user,
)
from accounts.reach import Reach
from accounts.tokens import TokenError, decode_external, decode_registry, issuer_of
from accounts.view_as import viewed_principal
from core.epochs import MISSING
from core.errors import ErrorCode
from core.metric_choices import AuthMethod as MetricAuthMethod
from core.metric_choices import MetricType
from core.metrics_client import emit, user_hash
from core.untrusted import InputRejected, check_text

logger = logging.getLogger(__name__)

SESSION_AUTH_KEY = "registry_auth"  # session data: {"method": "session"|"oauth", "provider": ...}
# An identity provider, or the registry's authorization server, vouched for the caller.
OAUTH_METHODS = (AuthMethod.OIDC, AuthMethod.OAUTH, AuthMethod.APPLICATION)


class InternalApiDisabled(exceptions.APIException):
    status_code = 503
    default_detail = "The internal API is disabled: set ADMIN_PASSWORD to enable it."
    default_code = ErrorCode.INTERNAL_API_DISABLED


def bearer_token(request, *, allow_x_authorization: bool = False) -> str | None:
    """The token of `Authorization: Bearer …` (or `X-Authorization`, for the proxy's check)."""
    headers = [request.META.get("HTTP_AUTHORIZATION", "")]
    if allow_x_authorization:
        headers.append(request.META.get("HTTP_X_AUTHORIZATION", ""))
    return next((token for header in headers if (token := bearer_of(header))), None)


def bearer_of(authorization: str) -> str | None:
    """The token of an `Authorization` header's value when its scheme is Bearer (any case), else None:
    the one reading of a bearer header, for the APIs and the gateway alike."""
    scheme, _, token = authorization.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def basic_credentials(request) -> tuple[str, str, bool] | None:
    """(user, password, whether a `:` separated them) of `Authorization: Basic …`, or None without one.

    Malformed credentials, and text no database could hold, are AuthenticationFailed before any lookup."""
    scheme, _, encoded = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    if scheme.lower() != "basic" or not encoded:
        return None
    try:
        username, sep, password = base64.b64decode(encoded.strip(), validate=True).decode().partition(":")
        check_text(username, "username")
        check_text(password, "password")
    except (binascii.Error, UnicodeDecodeError, InputRejected):
        raise exceptions.AuthenticationFailed("Malformed Basic credentials.") from None
    return username, password, bool(sep)


def principal_from_bearer(raw: str, *, report: bool = True, epoch=MISSING) -> Principal:
    """Verify a bearer token; raises AuthenticationFailed with a reason safe to show.

    A token verified before is answered from the per-process cache (accounts/cache.py) while the auth
    epoch (`epoch`, read here when not given) has not moved and the token has not expired.
    Each check is an `auth_request` metric, unless `report` is False: `/validate` reports its own, with
    the server it was asked about, so one proxy check is not counted twice."""
    started = time.perf_counter()
    principal = None
    try:
        key = token_key(raw)
        if epoch is MISSING:
            epoch = PRINCIPALS.epoch()
        principal = PRINCIPALS.get(key, epoch)
        if principal is not MISSING:
            USES.note(principal)
            return principal
        principal = None
        for resolve in _bearer_resolvers():
            found = resolve(raw)
            if found is not None:
                principal, expires_at = found
                PRINCIPALS.put(key, principal, epoch, expires_at=expires_at)
                USES.note(principal)
                return principal
        try:
            issuer = issuer_of(raw)
        except jwt.PyJWTError:
            raise exceptions.AuthenticationFailed("The token is malformed.", code="token_malformed") from None
        if settings.OIDC_TOKEN_ISSUER and issuer == settings.OIDC_TOKEN_ISSUER:
            principal, expires_at = _principal_from_external(raw)
        else:
            principal, expires_at = _principal_from_registry(raw)
        PRINCIPALS.put(key, principal, epoch, expires_at=expires_at)
        USES.note(principal)
        return principal
    finally:
        if report:
            report_auth_request(started=started, success=principal is not None, principal=principal, raw=raw)


def _bearer_resolvers():
    """The resolvers of the bearer tokens other apps issue (settings.BEARER_TOKEN_RESOLVERS), each
    `(raw) -> (Principal, expiry) | None`: None when the token is not of its kind."""
    return [import_string(path) for path in settings.BEARER_TOKEN_RESOLVERS]


def cached_principal(raw: str, epoch) -> Principal | None:
    """The Principal of a token verified before in this auth epoch, reported as its check; None when it
    must be verified (principal_from_bearer)."""
    started = time.perf_counter()
    principal = PRINCIPALS.get(token_key(raw), epoch)
    if principal is MISSING:
        return None
    USES.note(principal)
    report_auth_request(started=started, success=True, principal=principal, raw=raw)
    return principal


def report_auth_request(
    *, started: float, success: bool, principal: Principal | None, raw: str | None, server: str = ""
) -> None:
    """One `auth_request` metric: success, how the caller authenticated (`jwt` for the registry's own
    credentials, `oauth` for an identity provider's, `noauth` for none) and a hash of who it was. It runs
    in `finally` blocks, so it never raises: a metric must not replace a request's own answer."""
    try:
        if principal is not None:
            method = (
                MetricAuthMethod.OAUTH if principal.auth_method in OAUTH_METHODS else MetricAuthMethod.JWT
            )
        elif raw is not None:
            method = MetricAuthMethod.OAUTH if _is_external(raw) else MetricAuthMethod.JWT
        else:
            method = MetricAuthMethod.NOAUTH
        emit(
            MetricType.AUTH_REQUEST,
            duration_ms=(time.perf_counter() - started) * 1000,
            dimensions={
                "success": success,
                "method": str(method),
                "server": server,
                "user_hash": user_hash(principal.username) if principal is not None else "",
            },
            metadata={"auth_method": str(principal.auth_method)} if principal is not None else {},
        )
    except Exception:
        logger.exception("Could not report an auth_request metric.")


def _is_external(raw: str) -> bool:
    try:
        return bool(settings.OIDC_TOKEN_ISSUER) and issuer_of(raw) == settings.OIDC_TOKEN_ISSUER
    except jwt.PyJWTError:
        return False


def _principal_from_registry(raw: str) -> tuple[Principal, float | None]:
    try:
        claims = decode_registry(raw)
    except TokenError as exc:
        expired = "expired" in str(exc).lower()
        message = "The token has expired." if expired else "The token is invalid."
        raise exceptions.AuthenticationFailed(
            message, code="token_expired" if expired else "token_invalid"
        ) from None
    issued = IssuedToken.objects.filter(jti=claims.get("jti", "")).only("jti", "revoked_at", "kind").first()
    if issued is None or issued.revoked_at is not None:
        raise exceptions.AuthenticationFailed("The token has been revoked.", code="token_revoked")
    user = User.objects.filter(username=claims.get("sub"), is_active=True).first()
    if user is None:
        raise exceptions.AuthenticationFailed("The token's user no longer exists.", code="token_invalid")
    client_id = claims.get("client_id") if issued.kind == TokenKind.CLIENT_CREDENTIALS else None
    if client_id and not ClientCredential.objects.filter(client_id=client_id, is_active=True).exists():
        raise exceptions.AuthenticationFailed(
            "The token's client credential was revoked.", code="token_revoked"
        )
    reach = claims.get("reach")
    every_right = isinstance(reach, dict) and reach.get("all") is True
    principal = principal_for_user(
        user,
        auth_method=AuthMethod.JWT,
        client_id=client_id,
        token_scopes=None if every_right else str(claims.get("scope", "")).split(),
        token_admin=bool(claims.get("adm")),
        reach=Reach.from_claim(reach),
    )
    return replace(principal, token_jti=issued.jti), _expiry(claims)


def _expiry(claims: dict) -> float | None:
    exp = claims.get("exp")
    return float(exp) if isinstance(exp, int | float) else None


def _principal_from_external(raw: str) -> tuple[Principal, float | None]:
    try:
        claims = decode_external(raw)
    except jwt.ExpiredSignatureError:
        raise exceptions.AuthenticationFailed("The token has expired.", code="token_expired") from None
    except (jwt.PyJWTError, OSError, KeyError, ValueError):
        raise exceptions.AuthenticationFailed("The token is invalid.", code="token_invalid") from None
    groups = claims.get(settings.OIDC_GROUPS_CLAIM) or []
    if isinstance(groups, str):
        groups = groups.split()
    principal = principal_for_idp_groups(
        username=str(claims.get(settings.OIDC_USERNAME_CLAIM) or claims["sub"]),
        idp_groups=[str(g) for g in groups],
        provider=settings.OIDC_TOKEN_ISSUER,
        client_id=claims.get("client_id") or claims.get("azp"),
        email=str(claims.get("email", "")),
    )
    return principal, _expiry(claims)


def principal_from_session(request, user=None) -> Principal | None:
    """The principal of a logged-in session (form or identity-provider login) of a Django request.

    `user` is the session's user when the caller already has it; otherwise it is read from the session
    (DRF replaces `request.user` once its own authentication has run)."""
    if user is None:
        user = get_user(request)
    if not user.is_authenticated or not user.is_active:
        return None
    marker = request.session.get(SESSION_AUTH_KEY) or {}
    principal = principal_for_user(
        user, auth_method=marker.get("method", AuthMethod.SESSION), provider=marker.get("provider")
    )
    return viewed_principal(request.session, principal)


def principal_from_session_key(session_key: str | None) -> Principal | None:
    """The principal of the session `session_key` as stored now (a websocket has no request; it checks
    its session on connect and again on every keep-alive, so a logout or deactivation ends it)."""
    if not session_key:
        return None
    store = import_module(settings.SESSION_ENGINE).SessionStore(session_key=session_key)
    return principal_from_session(SimpleNamespace(session=store))


def principal_of(request) -> Principal:
    """The principal DRF authenticated for this request, or the anonymous one."""
    auth = getattr(request, "auth", None)
    return auth if isinstance(auth, Principal) else ANONYMOUS


class BearerAuthentication(BaseAuthentication):
    """`Authorization: Bearer <token>`; listed first so a missing credential answers 401, not 403."""

    def authenticate(self, request):
        raw = bearer_token(request)
        if raw is None:
            return None
        principal = principal_from_bearer(raw)
        if principal.bound_elsewhere(REGISTRY):
            raise exceptions.AuthenticationFailed(
                "The token was issued for another resource.", code="token_audience"
            )
        if principal.lacks_oauth_scope("registry"):
            raise exceptions.PermissionDenied(
                "The token's authorization does not include the registry scope.", code="insufficient_scope"
            )
        return (principal.user or principal, principal)

    def authenticate_header(self, request):
        return 'Bearer realm="mcp-gateway-registry"'


class PublicListingAuthentication(BaseAuthentication):
    """With PUBLIC_LISTING, a caller without credentials lists what the public group may list (listed
    after the other classes, so a credential that is presented is always checked)."""

    def authenticate(self, request):
        if not settings.PUBLIC_LISTING or request.META.get("HTTP_AUTHORIZATION"):
            return None
        principal = principal_for_public()
        return (principal, principal)


class RegistrySessionAuthentication(SessionAuthentication):
    """Django's session, with CSRF enforced on unsafe methods, resolved to a principal."""

    def authenticate(self, request):
        result = super().authenticate(request)
        if result is None:
            return None
        principal = principal_from_session(request._request, user=result[0])
        return (result[0], principal) if principal is not None else None


class InternalBasicAuthentication(BaseAuthentication):
    """HTTP Basic against ADMIN_USER / ADMIN_PASSWORD, compared in constant time; 503 without a password."""

    def authenticate(self, request):
        if not settings.ADMIN_PASSWORD:
            raise InternalApiDisabled()
        credentials = basic_credentials(request)
        if credentials is None:
            return None
        username, password, sep = credentials
        user_ok = hmac.compare_digest(username.encode(), settings.ADMIN_USER.encode())
        password_ok = hmac.compare_digest(password.encode(), settings.ADMIN_PASSWORD.encode())
        if not (sep and user_ok and password_ok):
            raise exceptions.AuthenticationFailed("Invalid credentials.")
        user = User.objects.filter(username=settings.ADMIN_USER).first()
        principal = Principal(
            username=settings.ADMIN_USER, auth_method=AuthMethod.BASIC, user=user, is_admin=True
        )
        return (user or principal, principal)

    def authenticate_header(self, request):
        return 'Basic realm="mcp-gateway-registry internal"'
