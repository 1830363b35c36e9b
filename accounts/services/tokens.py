"""Issuing and revoking access tokens: user tokens, service-account tokens, the registry's own."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field, replace
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.cache import PRINCIPALS
from accounts.choices import AuditAction, AuthMethod, TokenKind
from accounts.models import ClientCredential, IssuedToken, Scope, User
from accounts.principal import Principal, principal_for_user
from accounts.reach import ANY, Reach
from accounts.services.audit import audit_event_record
from accounts.tokens import encode
from core import ratelimit
from core.targets import TARGETS


class TokenRequestError(Exception):
    """A token request that cannot be granted; `code` names why, `status` is the HTTP answer and
    `headers` any headers it must carry (rate-limit state)."""

    def __init__(self, message: str, *, code: str, status: int, headers: dict | None = None):
        super().__init__(message)
        self.code = code
        self.status = status
        self.headers = headers or {}


@dataclass(frozen=True)
class TokenGrant:
    access_token: str
    expires_in: int
    scopes: tuple[str, ...]
    admin: bool = False  # carries administration rights (an admin's unrestricted token)
    headers: dict = field(default_factory=dict)  # rate-limit state for the response
    reach: Reach | None = None  # the server and tools it is narrowed to

    def as_response(self) -> dict:
        """The OAuth 2 token response shape of the interface."""
        return {
            "access_token": self.access_token,
            "token_type": "Bearer",
            "expires_in": self.expires_in,
            "refresh_token": None,
            "scope": " ".join(self.scopes),
        }


def _issue(
    *,
    user: User,
    scopes,
    admin: bool,
    lifetime: timedelta,
    kind: str,
    description: str = "",
    client_id: str | None = None,
    parent: IssuedToken | None = None,
    reach: Reach | None = None,
    every_right: bool = False,
) -> TokenGrant:
    groups = sorted(user.groups.values_list("name", flat=True))
    claim = _reach_claim(reach, every_right)
    encoded = encode(
        username=user.get_username(),
        scopes=scopes,
        groups=groups,
        admin=admin,
        lifetime=lifetime,
        kind=kind,
        client_id=client_id,
        reach=claim,
    )
    IssuedToken.objects.create(
        jti=encoded.jti,
        user=user,
        kind=kind,
        description=description,
        scopes=list(scopes),
        is_admin=admin,
        reach=claim,
        expires_at=encoded.expires_at,
        client_id=client_id or "",
        parent=parent,
    )
    return TokenGrant(encoded.token, int(lifetime.total_seconds()), tuple(scopes), admin=admin, reach=reach)


def _reach_claim(reach: Reach | None, every_right: bool) -> dict | None:
    """A reach as the token carries it; `all`: narrowed from every right of the holder (an
    administrator's included), not from the scopes the token lists."""
    if reach is None:
        return None
    return reach.as_claim() | ({"all": True} if every_right else {})


def user_token_issue(
    *,
    principal: Principal,
    requested_scopes: list[str] | None = None,
    expires_in_hours: int | None = None,
    description: str = "",
    server: str | None = None,
    tools: list[str] | None = None,
    admin: bool = False,
) -> TokenGrant:
    """A token for the caller, at most as strong as the caller: narrowed to one `server` and chosen
    `tools` (accounts/reach.py), or to `requested_scopes` (a subset of the caller's), or, by default,
    everything the caller may do but administer. Only an administrator asking for `admin` gets a token
    that administers.

    Each user may ask TOKEN_ISSUE_RATE_PER_MINUTE times a minute, whatever the surface (API or page).
    """
    if principal.user is None:
        raise TokenRequestError(
            "Tokens are issued to registry users only.", code="permission_denied", status=403
        )
    if principal.auth_method == AuthMethod.APPLICATION:
        raise TokenRequestError(
            "An authorized application's token cannot issue tokens.", code="permission_denied", status=403
        )
    if principal.client_id is not None or principal.user.is_service_account:
        raise TokenRequestError(
            "Service accounts cannot issue tokens: they get short-lived tokens with client credentials.",
            code="permission_denied",
            status=403,
        )
    limit = ratelimit.take(
        f"tokens:{principal.username}", capacity=settings.TOKEN_ISSUE_RATE_PER_MINUTE, period_seconds=60
    )
    if not limit.allowed:
        message = "Too many tokens requested; try again later."
        raise TokenRequestError(message, code="throttled", status=429, headers=limit.headers())
    hours = settings.TOKEN_DEFAULT_HOURS if expires_in_hours is None else expires_in_hours
    if not 1 <= hours <= settings.TOKEN_MAX_HOURS:
        raise TokenRequestError(
            f"expires_in_hours must be between 1 and {settings.TOKEN_MAX_HOURS}.",
            code="validation_error",
            status=400,
        )
    reach = _reach_asked(principal, requested_scopes, server, tools, admin)
    if requested_scopes is None:
        scopes = tuple(principal.scopes)
    else:
        requested = tuple(dict.fromkeys(requested_scopes))
        grantable = set(principal.scopes)
        if principal.is_admin:
            grantable |= set(Scope.objects.filter(name__in=requested).values_list("name", flat=True))
        refused = [name for name in requested if name not in grantable]
        if refused:
            raise TokenRequestError(
                f"Scopes not granted to the caller: {', '.join(refused)}.",
                code="permission_denied",
                status=403,
            )
        scopes = requested
    lifetime, parent = timedelta(hours=hours), None
    if principal.token_jti is not None:  # a token issuing a token: it ends, at the latest, with its parent
        parent = IssuedToken.objects.filter(jti=principal.token_jti).first()
        if parent is None or parent.revoked_at is not None:
            raise TokenRequestError("The token has been revoked.", code="token_revoked", status=401)
        lifetime = min(lifetime, parent.expires_at - timezone.now())
        if lifetime < timedelta(minutes=1):
            raise TokenRequestError(
                "The presenting token expires within a minute; log in again.",
                code="token_expired",
                status=401,
            )
    with transaction.atomic():
        grant = _issue(
            user=principal.user,
            scopes=scopes,
            admin=admin,
            lifetime=lifetime,
            kind=TokenKind.USER,
            description=description,
            parent=parent,
            reach=reach,
            every_right=requested_scopes is None,
        )
        detail = {"scopes": list(scopes), "expires_in": grant.expires_in, "description": description}
        audit_event_record(
            actor=principal,
            action=AuditAction.TOKEN_ISSUE,
            target=f"user:{principal.user.get_username()}",
            detail=detail | {"admin": admin, "reach": _reach_claim(reach, requested_scopes is None)},
        )
    return replace(grant, headers=limit.headers())


def _reach_asked(principal: Principal, requested_scopes, server, tools, admin: bool) -> Reach | None:
    """What the token is narrowed to, from what was asked; an administrator's token asked for nothing in
    particular reaches every server and tool but does not administer."""
    if admin:
        if not principal.is_admin:
            raise TokenRequestError(
                "Only administrators can make a token that administers.", code="permission_denied", status=403
            )
        if requested_scopes is not None or server is not None or tools:
            raise TokenRequestError(
                "A token that administers is not narrowed: leave out requested_scopes, server and tools.",
                code="validation_error",
                status=400,
            )
        return None
    if server is not None:
        if requested_scopes is not None:
            raise TokenRequestError(
                "Ask for one server or for scopes, not both.", code="validation_error", status=400
            )
        return TARGETS.token_reach(principal, server, tools or [])
    if tools:
        raise TokenRequestError("Name the server the tools are on.", code="validation_error", status=400)
    if principal.reach is not None:
        return principal.reach  # a narrowed token issues none that reaches further
    return Reach.of(ANY, [ANY]) if principal.is_admin and requested_scopes is None else None


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def client_credentials_exchange(*, client_id: str, client_secret: str) -> TokenGrant:
    """The client-credentials grant: a short-lived token for a service account."""
    credential = (
        ClientCredential.objects.select_related("user").filter(client_id=client_id, is_active=True).first()
    )
    # Compare against a dummy hash when the client is unknown, so timing does not reveal which.
    expected = credential.secret_hash if credential is not None else secret_hash(secrets.token_hex(16))
    if not hmac.compare_digest(secret_hash(client_secret), expected) or credential is None:
        raise TokenRequestError("Invalid client credentials.", code="invalid_client", status=401)
    user = credential.user
    if not (user.is_active and user.is_service_account):
        raise TokenRequestError("Invalid client credentials.", code="invalid_client", status=401)
    ClientCredential.objects.filter(pk=credential.pk).update(last_used_at=timezone.now())
    return service_account_token(user, client_id=credential.client_id)


def service_account_token(user: User, *, client_id: str | None = None) -> TokenGrant:
    """A short-lived token carrying all of the service account's scopes (and admin, if it is one)."""
    principal = principal_for_user(user, auth_method=AuthMethod.JWT)
    return _issue(
        user=user,
        scopes=principal.scopes,
        admin=principal.is_admin,
        lifetime=timedelta(seconds=settings.SERVICE_TOKEN_LIFETIME_SECONDS),
        kind=TokenKind.CLIENT_CREDENTIALS,
        client_id=client_id,
    )


def registry_service_token() -> TokenGrant:
    """A fresh token of the registry's own service account (REGISTRY_SERVICE_ACCOUNT)."""
    name = settings.REGISTRY_SERVICE_ACCOUNT
    user = (
        User.objects.filter(username=name, is_active=True, is_service_account=True).first() if name else None
    )
    if user is None:
        raise TokenRequestError(
            "No service account is configured: set REGISTRY_SERVICE_ACCOUNT to the username of an active "
            "service account (manage.py create_service_account).",
            code="service_account_not_configured",
            status=503,
        )
    return service_account_token(user)


def token_revoke(*, actor, token: IssuedToken) -> IssuedToken:
    """Revoke a token and every token it issued, and theirs in turn."""
    if token.revoked_at is not None:
        return token
    with transaction.atomic():
        now = timezone.now()
        token.revoked_at = now
        token.save(update_fields=["revoked_at"])
        descendants = _descendants_revoke([token.pk], now)
        audit_event_record(
            actor=actor,
            action=AuditAction.TOKEN_REVOKE,
            target=f"token:{token.jti}",
            detail={"descendants_revoked": descendants} if descendants else {},
        )
    return token


def tokens_of_client_revoke(*, client_id: str) -> int:
    """Revoke every live token issued for a client credential, and the tokens those issued (called when
    the credential is revoked). Returns how many were revoked."""
    now = timezone.now()
    live = IssuedToken.objects.filter(client_id=client_id, revoked_at__isnull=True)
    ids = list(live.values_list("pk", flat=True))
    IssuedToken.objects.filter(pk__in=ids).update(revoked_at=now)
    PRINCIPALS.bump()  # a bulk update sends no signal (accounts/cache.py)
    return len(ids) + _descendants_revoke(ids, now)


def _descendants_revoke(parent_ids: list[int], now) -> int:
    revoked = 0
    while parent_ids:
        children = IssuedToken.objects.filter(parent_id__in=parent_ids, revoked_at__isnull=True)
        parent_ids = list(children.values_list("pk", flat=True))
        revoked += IssuedToken.objects.filter(pk__in=parent_ids).update(revoked_at=now)
    if revoked:
        PRINCIPALS.bump()  # a bulk update sends no signal (accounts/cache.py)
    return revoked


def tokens_purge_expired(*, older_than: timedelta = timedelta(days=1)) -> int:
    """Drop records of tokens that expired long enough ago to be useless even for revocation."""
    deleted, _ = IssuedToken.objects.filter(expires_at__lt=timezone.now() - older_than).delete()
    return deleted
