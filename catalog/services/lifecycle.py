"""The lifecycle of published versions: active, deprecated, deleted (PATCH …/status), and detaching
a mirrored server from its upstream so that it can be published here."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from accounts.choices import AuditAction
from accounts.services import audit_event_record
from catalog import policies
from catalog.choices import Status
from catalog.models import STATUS_MESSAGE_MAX_LENGTH, ServerVersion
from catalog.services.latest import latest_recompute, name_lock
from catalog.services.publishing import CatalogRefused


@dataclass(frozen=True)
class StatusChange:
    """A StatusUpdateRequest: `{status, statusMessage?}`."""

    status: str
    message: str = ""

    @classmethod
    def from_body(cls, body) -> StatusChange:
        if not isinstance(body, dict):
            raise CatalogRefused(400, "The body must be an object: {status, statusMessage}.")
        unknown = sorted(set(body) - {"status", "statusMessage"})
        if unknown:
            raise CatalogRefused(400, f"Unknown field {unknown[0]!r} (the fields are status, statusMessage).")
        status = body.get("status")
        if status not in Status.values:
            raise CatalogRefused(400, f"status must be one of {', '.join(Status.values)}.")
        message = body.get("statusMessage", "")
        if message is None:
            message = ""
        if not isinstance(message, str) or len(message) > STATUS_MESSAGE_MAX_LENGTH:
            raise CatalogRefused(
                400, f"statusMessage must be text of at most {STATUS_MESSAGE_MAX_LENGTH} characters."
            )
        return cls(status=status, message=message.strip())


def _check_editable(actor, name: str, rows) -> None:
    if why := policies.gateway_name_refusal(name):
        raise CatalogRefused(403, why)
    if not rows:
        raise CatalogRefused(404, "Server not found")
    if why := policies.publish_refusal(actor, name):
        raise CatalogRefused(403, why)
    mirrored = next((row for row in rows if row.upstream_id is not None), None)
    if mirrored is not None:
        raise CatalogRefused(
            403,
            f"{name} is mirrored from the upstream {mirrored.upstream.name}, whose status it follows.",
        )


def _apply(rows, change: StatusChange, now) -> list[ServerVersion]:
    changed = []
    for row in rows:
        if row.status == change.status and row.status_message == change.message:
            continue
        if row.status != change.status:
            row.status_changed_at = now
        row.status, row.status_message, row.updated_at = change.status, change.message, now
        row.save(update_fields=["status", "status_message", "status_changed_at", "updated_at"])
        changed.append(row)
    return changed


def _rows(name: str):
    return list(
        ServerVersion.objects.filter(name=name).select_related("upstream").order_by("-published_at", "-id")
    )


def version_status_set(*, actor, name: str, version: str, change: StatusChange) -> ServerVersion:
    """Set one version's status (and message); `isLatest` follows."""
    with transaction.atomic():
        name_lock(name)
        rows = _rows(name)
        _check_editable(actor, name, rows)
        row = next((row for row in rows if row.version == version), None)
        if row is None:
            raise CatalogRefused(404, "Server version not found")
        if not _apply([row], change, timezone.now()):
            raise CatalogRefused(400, f"No changes to apply: status is already {change.status}")
        latest_recompute(name)
        audit_event_record(
            actor=actor,
            action=AuditAction.VERSION_STATUS,
            target=f"server:{name}",
            detail={"versions": [version], "status": change.status, "message": change.message},
        )
    row.refresh_from_db(fields=["is_latest"])
    return row


def server_status_set(*, actor, name: str, change: StatusChange) -> tuple[int, list[ServerVersion]]:
    """Set the status of every version of a server, all or none; returns (how many changed, all of them)."""
    with transaction.atomic():
        name_lock(name)
        rows = _rows(name)
        _check_editable(actor, name, rows)
        changed = _apply(rows, change, timezone.now())
        if changed:
            latest_recompute(name)
            audit_event_record(
                actor=actor,
                action=AuditAction.VERSION_STATUS,
                target=f"server:{name}",
                detail={
                    "versions": [row.version for row in changed],
                    "status": change.status,
                    "message": change.message,
                },
            )
    return len(changed), _rows(name)


def versions_detach(*, actor, name: str) -> int:
    """Make a mirrored server's versions this registry's own: no sync changes them any more, and they can
    be published to and have their status changed here. Returns how many versions were detached."""
    with transaction.atomic():
        name_lock(name)
        mirrored = ServerVersion.objects.filter(name=name, upstream__isnull=False)
        upstreams = sorted(set(mirrored.values_list("upstream__name", flat=True)))
        count = mirrored.update(upstream=None)
        if count:
            latest_recompute(name)
            audit_event_record(
                actor=actor,
                action=AuditAction.VERSIONS_DETACH,
                target=f"server:{name}",
                detail={"from": upstreams},
            )
    return count
