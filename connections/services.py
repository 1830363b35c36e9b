"""Writes of upstream credentials: connecting a user's secret or sign-in (or the discovery connection),
keeping a refreshed sign-in, disconnecting (revoked at the upstream when it offers revocation), an
administrator's revocation, sealing again under the newest key, and removing what can no longer be used.
Each is audited; no audit row, log line or error message ever carries a secret."""

import logging

from django.db import transaction
from django.utils import timezone

from accounts.choices import AuditAction
from accounts.services.audit import actor_user, audit_event_record
from connections.choices import Purpose
from connections.models import UpstreamClient, UpstreamCredential, of_target
from connections.oauth import tokens as oauth_tokens
from connections.oauth.client import client_secret_sealed
from connections.sealed import fits, open_as_connected, resealed, seal_for
from core import sealing
from core.public_url import origin_of
from core.targets import TARGETS
from servers.choices import UpstreamAuth
from servers.shared_headers import SharedHeadersLost

logger = logging.getLogger(__name__)

SECRET_MAX_LENGTH = 4096


class ConnectionRefused(Exception):
    """A connection that cannot be made; the message is safe to show (it never holds the secret)."""


def secret_problem(secret: str) -> str | None:
    if not secret.strip():
        return "Enter the secret."
    if len(secret) > SECRET_MAX_LENGTH:
        return f"A secret is at most {SECRET_MAX_LENGTH} characters."
    if any(ord(c) < 0x20 or ord(c) == 0x7F or ord(c) > 0x7E for c in secret.strip()):
        return "A secret is printable ASCII, without line breaks (it travels in an HTTP header)."
    return None


def credential_secret_connect(*, actor, target, user, secret: str, purpose: str = Purpose.USER):
    """Store `user`'s secret for `target` (a server or an agent; or, with purpose `discovery` and no user,
    the discovery connection), replacing the one before."""
    if target.upstream_auth != UpstreamAuth.USER_SECRET:
        raise ConnectionRefused(f"{target.path} does not take each user's secret.")
    if purpose == Purpose.USER and (user is None or user.is_service_account):
        raise ConnectionRefused("Service accounts use only targets with no credential or shared headers.")
    if problem := secret_problem(secret):
        raise ConnectionRefused(problem)
    user_id = user.pk if purpose == Purpose.USER else None
    sealed, mode, origin = seal_for(
        target=target, user_id=user_id, purpose=purpose, values={"secret": secret.strip()}
    )
    with transaction.atomic():
        credential, created = UpstreamCredential.objects.update_or_create(
            **of_target(target),
            user_id=user_id,
            purpose=purpose,
            defaults={"sealed": sealed, "mode": mode, "origin": origin, "connected_by": actor_user(actor)},
        )
        audit_event_record(
            actor=actor,
            action=AuditAction.CONNECTION_CONNECT,
            target=audit_target(target),
            detail={"purpose": purpose, "user": user.username if user_id else "", "replaced": not created},
        )
    return credential


def credential_signed_in(*, actor, user, signed_in):
    """Store the tokens of a completed sign-in (connections/oauth/flow.py) for its target and `user` (None
    for the discovery connection), replacing the connection before. Refused when the target changed its
    mode or address since the sign-in began: the tokens are for the target as it was."""
    kind = TARGETS.upstreams.get(signed_in.kind)
    target = kind.model.objects.filter(pk=signed_in.target_id).first() if kind is not None else None
    if (
        target is None
        or target.upstream_auth != UpstreamAuth.USER_OAUTH
        or origin_of(target.upstream_url) != origin_of(signed_in.target_url)
    ):
        raise ConnectionRefused("The target changed while you were signing in: nothing was connected.")
    grant = signed_in.grant
    values = {
        **signed_in.values,
        "access_token": grant.access_token,
        "refresh_token": grant.refresh_token,
    }
    user_id = user.pk if user is not None else None
    with transaction.atomic():
        credential, created = _granted_store(
            target=target,
            user_id=user_id,
            purpose=signed_in.purpose,
            values=values,
            grant=grant,
            connected_by=actor_user(actor),
        )
        audit_event_record(
            actor=actor,
            action=AuditAction.CONNECTION_CONNECT,
            target=audit_target(target),
            detail={
                "purpose": signed_in.purpose,
                "user": user.username if user is not None else "",
                "replaced": not created,
                "how": "sign-in",
                "scopes": grant.scopes[:1000],
            },
        )
    return credential


def _granted_store(*, target, user_id, purpose: str, values: dict, grant, connected_by):
    """(the credential, whether it is new): `values` sealed for the target as it is now and kept for
    `user_id` and `purpose` with what the authorization server granted, replacing the one before."""
    sealed, mode, origin = seal_for(target=target, user_id=user_id, purpose=purpose, values=values)
    return UpstreamCredential.objects.update_or_create(
        **of_target(target),
        user_id=user_id,
        purpose=purpose,
        defaults={
            "sealed": sealed,
            "mode": mode,
            "origin": origin,
            "scopes": grant.scopes[:1000],
            "wanted_scopes": "",
            "expires_at": grant.expires_at,
            "connected_by": connected_by,
        },
    )


def credential_cross_app_store(*, target, user, grant, idp: str, audience: str) -> UpstreamCredential:
    """Keep the access token the target's authorization server issued for the user's company identity
    (connections/cross_app.py), replacing the one before; audited without the tokens."""
    values = {"access_token": grant.access_token}
    with transaction.atomic():
        credential, _ = _granted_store(
            target=target,
            user_id=user.pk,
            purpose=Purpose.USER,
            values=values,
            grant=grant,
            connected_by=user,
        )
        audit_event_record(
            actor=user,
            action=AuditAction.CONNECTION_CROSS_APP,
            target=audit_target(target),
            detail={
                "identity_provider": idp,
                "authorization_server": audience,
                "scopes": grant.scopes[:1000],
                "expires_at": grant.expires_at.isoformat() if grant.expires_at else None,
            },
        )
    return credential


def cross_app_refused(*, target, user, reason: str) -> None:
    """An exchange of the user's company identity for `target` failed: why, never a token."""
    audit_event_record(
        actor=user,
        action=AuditAction.CONNECTION_CROSS_APP_REFUSED,
        target=audit_target(target),
        detail={"reason": reason[:300]},
    )


def credential_refreshed(*, credential: UpstreamCredential, target, values: dict, grant) -> dict:
    """Keep a refreshed sign-in (no audit: routine; no cache epoch: the old token stays in use where it is
    cached until it fails or expires). The connection's values as they are now."""
    values = {**values, "access_token": grant.access_token, "refresh_token": grant.refresh_token}
    sealed, _, _ = seal_for(
        target=target, user_id=credential.user_id, purpose=credential.purpose, values=values
    )
    UpstreamCredential.objects.filter(pk=credential.pk).update(
        sealed=sealed, expires_at=grant.expires_at, scopes=(grant.scopes or credential.scopes)[:1000]
    )
    credential.sealed, credential.expires_at = sealed, grant.expires_at
    return values


def credential_refresh_failed(*, credential: UpstreamCredential, reason: str) -> None:
    """A sign-in the upstream will not refresh: the connection is removed and its user asked again."""
    with transaction.atomic():
        audit_event_record(
            actor=None,
            action=AuditAction.CONNECTION_REFRESH_FAILED,
            target=audit_target(credential.target),
            detail={
                "purpose": credential.purpose,
                "user": credential.user.username if credential.user else "",
                "reason": reason[:300],
            },
        )
        credential.delete()


def credential_step_up(*, credential: UpstreamCredential, scopes: str) -> None:
    """The upstream asked for more scope than the connection has: the next sign-in asks for it too."""
    wanted = " ".join(dict.fromkeys(f"{credential.wanted_scopes} {scopes}".split()))
    UpstreamCredential.objects.filter(pk=credential.pk).update(wanted_scopes=wanted[:1000])


def credential_disconnect(*, actor, credential: UpstreamCredential, by_administrator: bool = False) -> None:
    """Remove a stored credential (its owner disconnecting, or an administrator revoking it); a sign-in is
    revoked at the upstream too when it offers revocation."""
    _revoke_upstream(credential)
    with transaction.atomic():
        audit_event_record(
            actor=actor,
            action=AuditAction.CONNECTION_REVOKE if by_administrator else AuditAction.CONNECTION_DISCONNECT,
            target=audit_target(credential.target),
            detail={
                "purpose": credential.purpose,
                "user": credential.user.username if credential.user else "",
            },
        )
        credential.delete()


def audit_target(target) -> str:
    """How the audit trail names a credential's target: `server:/path` or `agent:/path`."""
    return f"{target.TARGET_KIND}:{target.path}"


def upstream_client_problem(*, issuer: str, client_id: str, secret: str) -> str | None:
    if not issuer.strip().startswith(("https://", "http://")) or not client_id.strip():
        return "Enter the authorization server's issuer URL and the client id it gave."
    if any(c in secret for c in "\r\n\0") or len(secret) > SECRET_MAX_LENGTH:
        return f"A client secret is one line of at most {SECRET_MAX_LENGTH} characters."
    return None


def upstream_client_enter(*, actor, issuer: str, client_id: str, client_secret: str, redirect_uri: str):
    """The registry's client at `issuer` as an operator registered it by hand (used before documents and
    dynamic registration), replacing any client the registry has there for that redirect URI."""
    if problem := upstream_client_problem(issuer=issuer, client_id=client_id, secret=client_secret):
        raise ConnectionRefused(problem)
    issuer, client_id, redirect_uri = issuer.strip().rstrip("/"), client_id.strip(), redirect_uri.strip()
    sealed = client_secret_sealed(issuer=issuer, redirect_uri=redirect_uri, secret=client_secret)
    with transaction.atomic():
        UpstreamClient.objects.filter(issuer=issuer, entered=True).delete()
        client, _ = UpstreamClient.objects.update_or_create(
            issuer=issuer,
            redirect_uri=redirect_uri,
            defaults={"client_id": client_id, "sealed_secret": sealed, "entered": True},
        )
        audit_event_record(
            actor=actor,
            action=AuditAction.UPSTREAM_CLIENT_ENTER,
            target=f"issuer:{issuer}",
            detail={"client_id": client_id, "redirect_uri": redirect_uri, "secret": bool(client_secret)},
        )
    return client


def upstream_client_remove(*, actor, client: UpstreamClient) -> None:
    """Forget the registry's client at an issuer (the next sign-in there identifies the registry anew)."""
    with transaction.atomic():
        audit_event_record(
            actor=actor,
            action=AuditAction.UPSTREAM_CLIENT_REMOVE,
            target=f"issuer:{client.issuer}",
            detail={"client_id": client.client_id, "entered": client.entered},
        )
        client.delete()


def credentials_reseal(*, progress=None) -> tuple[int, int]:
    """Seal every credential not sealed under the newest key again under it, users' connections and the
    operators' shared headers of every kind of target alike; (resealed, unopenable). A credential no
    configured key opens is left as it is (and is never used)."""
    done = failed = 0
    stale = [
        c
        for c in UpstreamCredential.objects.select_related("server", "agent")
        if not sealing.sealed_with_newest(c.sealed)
    ]
    shared = [
        target
        for upstream in TARGETS.upstreams.values()
        for target in upstream.model.objects.exclude(sealed_headers="").defer("embedding")
        if not sealing.sealed_with_newest(target.sealed_headers)
    ]
    for index, row in enumerate([*stale, *shared], 1):
        try:
            if isinstance(row, UpstreamCredential):
                row.sealed = resealed(row, row.target)
                row.save(update_fields=["sealed"])
            else:
                row.headers = row.shared_headers()  # opened under any configured key, sealed under the newest
                row.save(update_fields=["sealed_headers"])
        except (sealing.Unsealable, SharedHeadersLost):
            failed += 1
        else:
            done += 1
        if progress is not None:
            progress(index, len(stale) + len(shared))
    return done, failed


def credentials_prune() -> int:
    """Remove the credentials that can no longer be used: their user was deactivated, or their target's
    mode or origin changed since they were connected. Safe to run twice."""
    doomed = []
    for credential in UpstreamCredential.objects.select_related("server", "agent", "user"):
        inactive = credential.user is not None and not credential.user.is_active
        if inactive or not fits(credential, credential.target):
            doomed.append(credential.pk)
    if doomed:
        for credential in UpstreamCredential.objects.filter(pk__in=doomed).select_related("server", "agent"):
            _revoke_upstream(credential)
        with transaction.atomic():
            UpstreamCredential.objects.filter(pk__in=doomed).delete()
            audit_event_record(
                actor=None,
                action=AuditAction.CONNECTIONS_PRUNE,
                target="connections",
                detail={"removed": len(doomed), "at": timezone.now().isoformat()},
            )
    return len(doomed)


def _revoke_upstream(credential: UpstreamCredential) -> None:
    """Revoke a sign-in's tokens where they were issued (best effort: the connection goes either way)."""
    if credential.mode != UpstreamAuth.USER_OAUTH:
        return
    try:
        values = open_as_connected(credential)
    except sealing.Unsealable:
        return
    if not oauth_tokens.revoke(values, registered=credential.origin):
        logger.info("The sign-in to %s was not revoked at its upstream.", credential.target.path)
