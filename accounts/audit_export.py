"""The audit trail as a SIEM reads it (`GET /api/audit/export`): the chained rows after a cursor (their
place in the chain), each with the hashes that link it, its detail passed through the one redaction rule
(core/redaction.py), in the registry's own shape or mapped to OCSF API Activity (class 6003) or CEF;
docs/observability.md has the mappings field by field."""

from __future__ import annotations

import json

from django.conf import settings

from accounts.models import AuditEvent
from core.redaction import redacted

FORMATS = ("ndjson", "ocsf", "cef")
OCSF_VERSION = "1.3.0"
OCSF_API_ACTIVITY = 6003
# OCSF activity_id by the verb of an audit action ("server.create" → create).
OCSF_ACTIVITIES = {"create": 1, "issue": 1, "publish": 1, "connect": 1, "update": 3, "delete": 4, "revoke": 4}
CEF_VENDOR, CEF_VERSION = "mcp-gateway-registry", "1"


def rows_after(cursor: int, limit: int) -> list[AuditEvent]:
    """The chained rows after place `cursor`, in chain order, at most `limit`."""
    rows = AuditEvent.objects.filter(chain_seq__gt=cursor).order_by("chain_seq")
    return list(rows[:limit])


def shown(row: AuditEvent) -> dict:
    detail = redacted(row.detail)
    return {
        "seq": row.chain_seq,
        "id": row.id,
        "time": row.created_at.isoformat(timespec="microseconds"),
        "actor_id": row.actor_id,
        "actor": row.actor_name,
        "action": row.action,
        "target": row.target,
        "detail": detail,
        "redacted": detail != row.detail,  # then its hash is checked by audit_verify, not from the export
        "prev_hash": row.prev_hash,
        "row_hash": row.row_hash,
    }


def ocsf(row: AuditEvent) -> dict:
    activity = OCSF_ACTIVITIES.get(row.action.rpartition(".")[2].split("_")[0], 99)
    kind, _, identifier = row.target.partition(":")
    return {
        "category_uid": 6,
        "class_uid": OCSF_API_ACTIVITY,
        "activity_id": activity,
        "type_uid": OCSF_API_ACTIVITY * 100 + activity,
        "severity_id": 1,
        "status_id": 1,
        "time": int(row.created_at.timestamp() * 1000),
        "actor": {"user": {"name": row.actor_name, "uid": str(row.actor_id) if row.actor_id else None}},
        "api": {"operation": row.action, "service": {"name": settings.REGISTRY_SERVICE_NAME}},
        "resources": [{"type": kind, "uid": identifier}],
        "metadata": {
            "version": OCSF_VERSION,
            "uid": str(row.id),
            "product": {"name": settings.REGISTRY_SERVICE_NAME, "vendor_name": CEF_VENDOR},
        },
        "unmapped": {
            "seq": row.chain_seq,
            "detail": redacted(row.detail),
            "prev_hash": row.prev_hash,
            "row_hash": row.row_hash,
        },
    }


def cef(row: AuditEvent) -> str:
    def header(text: str) -> str:
        return text.replace("\\", "\\\\").replace("|", "\\|")

    def value(text) -> str:
        text = str(text).replace("\\", "\\\\").replace("=", "\\=")
        return text.replace("\r", "\\r").replace("\n", "\\n")

    extension = {
        "rt": int(row.created_at.timestamp() * 1000),
        "suser": row.actor_name,
        "act": row.action,
        "externalId": row.chain_seq,
        "cs1Label": "target",
        "cs1": row.target,
        "cs2Label": "rowHash",
        "cs2": row.row_hash,
        "cs3Label": "detail",
        "cs3": json.dumps(redacted(row.detail), sort_keys=True, separators=(",", ":")),
    }
    fields = " ".join(f"{name}={value(text)}" for name, text in extension.items())
    label = row.get_action_display()
    product = f"{CEF_VENDOR}|{settings.REGISTRY_SERVICE_NAME}|{CEF_VERSION}"
    return f"CEF:0|{product}|{header(row.action)}|{header(label)}|3|{fields}"


def line(row: AuditEvent, form: str) -> str:
    if form == "cef":
        return cef(row)
    document = ocsf(row) if form == "ocsf" else shown(row)
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))
