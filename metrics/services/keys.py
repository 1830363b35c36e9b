"""API keys of sending services: made, synchronised from the environment, revoked. Only the SHA-256 of
a key is ever stored."""

import os
import secrets

from django.db import transaction
from django.utils import timezone

from accounts.choices import AuditAction
from accounts.services import audit_event_record
from metrics.models import ApiKey, key_hash

ENV_PREFIX = "METRICS_API_KEY_"
KEY_PREFIX = "mk_"


def _target(key: ApiKey) -> str:
    return f"metrics_key:{key.service}"


def api_key_create(
    *, actor, service: str, rate_limit: int | None = None, is_admin: bool = False, raw: str | None = None
) -> tuple[ApiKey, str]:
    """Make (or replace) the key of `service`; returns the row and the key, which is not stored."""
    service = service.strip().lower()
    if not service:
        raise ValueError("A key needs a service name.")
    raw = raw or f"{KEY_PREFIX}{secrets.token_urlsafe(32)}"
    with transaction.atomic():
        key, created = ApiKey.objects.update_or_create(
            service=service,
            defaults={
                "key_hash": key_hash(raw),
                "prefix": raw[:8],
                "rate_limit": rate_limit,
                "is_admin": is_admin,
                "revoked_at": None,
                "from_environment": False,
            },
        )
        audit_event_record(
            actor=actor,
            action=AuditAction.METRICS_KEY_CREATE if created else AuditAction.METRICS_KEY_UPDATE,
            target=_target(key),
            detail={"admin": is_admin, "rate_limit": rate_limit},
        )
    return key, raw


def api_key_update(*, actor, key: ApiKey, rate_limit: int | None, is_admin: bool) -> ApiKey:
    """Change a key's rate limit (None: the default) and admin flag."""
    changed = [
        name
        for name, value in (("rate_limit", rate_limit), ("is_admin", is_admin))
        if getattr(key, name) != value
    ]
    if changed:
        with transaction.atomic():
            key.rate_limit, key.is_admin = rate_limit, is_admin
            key.save(update_fields=changed)
            audit_event_record(
                actor=actor,
                action=AuditAction.METRICS_KEY_UPDATE,
                target=_target(key),
                detail={"fields": changed},
            )
    return key


def api_key_revoke(*, actor, key: ApiKey) -> ApiKey:
    if key.revoked_at is None:
        with transaction.atomic():
            key.revoked_at = timezone.now()
            key.save(update_fields=["revoked_at"])
            audit_event_record(actor=actor, action=AuditAction.METRICS_KEY_REVOKE, target=_target(key))
    return key


def api_keys_from_environment(environ=None) -> list[str]:
    """Create or update the key of service `<name>` for every METRICS_API_KEY_<NAME> variable (at start-up);
    returns the services. A key whose hash already matches is left alone, so restarts write nothing and
    a key revoked in the admin stays revoked until the variable holds a new key. Rate limit and admin flag
    set in the admin are kept."""
    environ = os.environ if environ is None else environ
    services = []
    for name, raw in sorted(environ.items()):
        if not name.startswith(ENV_PREFIX) or not raw.strip() or len(name) == len(ENV_PREFIX):
            continue
        service = name[len(ENV_PREFIX) :].lower()
        services.append(service)
        digest = key_hash(raw.strip())
        current = ApiKey.objects.filter(service=service).first()
        if current and current.key_hash == digest:
            continue
        with transaction.atomic():
            key, created = ApiKey.objects.update_or_create(
                service=service,
                defaults={
                    "key_hash": digest,
                    "prefix": raw.strip()[:8],
                    "revoked_at": None,
                    "from_environment": True,
                },
            )
            audit_event_record(
                actor=None,
                action=AuditAction.METRICS_KEY_CREATE if created else AuditAction.METRICS_KEY_UPDATE,
                target=_target(key),
                detail={"from": name},
            )
    return services
