"""Service accounts and their client credentials (client id + a secret shown once)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.contrib.auth.models import Group
from django.db import transaction

from accounts.choices import AuditAction
from accounts.models import ClientCredential, User
from accounts.services.audit import audit_event_record
from accounts.services.tokens import secret_hash, tokens_of_client_revoke


@dataclass(frozen=True)
class NewCredential:
    credential: ClientCredential
    client_secret: str  # never stored; show it once


def client_credential_create(*, actor, user: User, description: str = "") -> NewCredential:
    """A new client id and secret for a service account."""
    if not user.is_service_account:
        raise ValueError(f"{user.get_username()} is not a service account")
    secret = secrets.token_urlsafe(32)
    with transaction.atomic():
        credential = ClientCredential.objects.create(
            user=user,
            client_id=f"{user.get_username()}-{secrets.token_hex(6)}",
            secret_hash=secret_hash(secret),
            description=description,
        )
        audit_event_record(
            actor=actor, action=AuditAction.CREDENTIAL_CREATE, target=f"credential:{credential.client_id}"
        )
    return NewCredential(credential, secret)


def client_credential_revoke(*, actor, credential: ClientCredential) -> None:
    """Deactivate a credential; the tokens it was exchanged for stop working with it."""
    if not credential.is_active:
        return
    with transaction.atomic():
        credential.is_active = False
        credential.save(update_fields=["is_active"])
        revoked = tokens_of_client_revoke(client_id=credential.client_id)
        audit_event_record(
            actor=actor,
            action=AuditAction.CREDENTIAL_REVOKE,
            target=f"credential:{credential.client_id}",
            detail={"tokens_revoked": revoked},
        )


def service_account_create(
    *, actor, username: str, group_names: list[str], description: str = ""
) -> NewCredential:
    """A service-account user in `group_names` (created when missing), with its first credential."""
    with transaction.atomic():
        user = User(username=username, is_service_account=True)
        user.set_unusable_password()
        user.full_clean()
        user.save()
        user.groups.set([Group.objects.get_or_create(name=name)[0] for name in group_names])
        audit_event_record(
            actor=actor,
            action=AuditAction.USER_CREATE,
            target=f"user:{username}",
            detail={"service_account": True, "groups": sorted(group_names)},
        )
        return client_credential_create(actor=actor, user=user, description=description)
