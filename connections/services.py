"""Writes of upstream credentials: connecting a user's secret (or the discovery connection), disconnecting,
an administrator's revocation, sealing again under the newest key, and removing what can no longer be
used. Each is audited; no audit row, log line or error message ever carries a secret."""

from django.db import transaction
from django.utils import timezone

from accounts.choices import AuditAction
from accounts.services.audit import actor_user, audit_event_record
from connections.choices import Purpose
from connections.models import UpstreamCredential
from connections.sealed import fits, resealed, seal_for
from core import sealing
from servers.choices import UpstreamAuth

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


def credential_secret_connect(*, actor, server, user, secret: str, purpose: str = Purpose.USER):
    """Store `user`'s secret for `server` (or, with purpose `discovery` and no user, the discovery
    connection), replacing the one before."""
    if server.upstream_auth != UpstreamAuth.USER_SECRET:
        raise ConnectionRefused(f"{server.path} does not take each user's secret.")
    if purpose == Purpose.USER and (user is None or user.is_service_account):
        raise ConnectionRefused("Service accounts use only servers with no credential or shared headers.")
    if problem := secret_problem(secret):
        raise ConnectionRefused(problem)
    user_id = user.pk if purpose == Purpose.USER else None
    sealed, mode, origin = seal_for(
        server=server, user_id=user_id, purpose=purpose, values={"secret": secret.strip()}
    )
    with transaction.atomic():
        credential, created = UpstreamCredential.objects.update_or_create(
            server=server,
            user_id=user_id,
            purpose=purpose,
            defaults={"sealed": sealed, "mode": mode, "origin": origin, "connected_by": actor_user(actor)},
        )
        audit_event_record(
            actor=actor,
            action=AuditAction.CONNECTION_CONNECT,
            target=f"server:{server.path}",
            detail={"purpose": purpose, "user": user.username if user_id else "", "replaced": not created},
        )
    return credential


def credential_disconnect(*, actor, credential: UpstreamCredential, by_administrator: bool = False) -> None:
    """Remove a stored credential (its owner disconnecting, or an administrator revoking it)."""
    with transaction.atomic():
        audit_event_record(
            actor=actor,
            action=AuditAction.CONNECTION_REVOKE if by_administrator else AuditAction.CONNECTION_DISCONNECT,
            target=f"server:{credential.server.path}",
            detail={
                "purpose": credential.purpose,
                "user": credential.user.username if credential.user else "",
            },
        )
        credential.delete()


def credentials_reseal(*, progress=None) -> tuple[int, int]:
    """Seal every credential not sealed under the newest key again under it; (resealed, unopenable).
    A credential no configured key opens is left as it is (and is never used)."""
    done = failed = 0
    stale = [
        c
        for c in UpstreamCredential.objects.select_related("server")
        if not sealing.sealed_with_newest(c.sealed)
    ]
    for index, credential in enumerate(stale, 1):
        try:
            credential.sealed = resealed(credential, credential.server)
        except sealing.Unsealable:
            failed += 1
        else:
            credential.save(update_fields=["sealed"])
            done += 1
        if progress is not None:
            progress(index, len(stale))
    return done, failed


def credentials_prune() -> int:
    """Remove the credentials that can no longer be used: their user was deactivated, or their server's
    mode or origin changed since they were connected. Safe to run twice."""
    doomed = []
    for credential in UpstreamCredential.objects.select_related("server", "user"):
        inactive = credential.user is not None and not credential.user.is_active
        if inactive or not fits(credential, credential.server):
            doomed.append(credential.pk)
    if doomed:
        with transaction.atomic():
            UpstreamCredential.objects.filter(pk__in=doomed).delete()
            audit_event_record(
                actor=None,
                action=AuditAction.CONNECTIONS_PRUNE,
                target="connections",
                detail={"removed": len(doomed), "at": timezone.now().isoformat()},
            )
    return len(doomed)
