"""Reads of the metrics service."""

from django.conf import settings

from metrics.models import METRIC_TABLES, ApiKey, RetentionPolicy
from metrics.services.keys import key_hash


def api_key_for(raw: str | None) -> ApiKey | None:
    """The active key whose hash matches `raw`, or None (unknown, revoked or missing)."""
    if not raw:
        return None
    return ApiKey.objects.filter(key_hash=key_hash(raw.strip()), revoked_at__isnull=True).first()


def retention_days() -> dict[str, int]:
    """Days each table keeps its rows: its policy, else METRICS_RETENTION_DAYS."""
    policies = dict(RetentionPolicy.objects.values_list("table", "days"))
    return {name: policies.get(name, settings.METRICS_RETENTION_DAYS) for name in METRIC_TABLES}


def retention_policies() -> list[dict]:
    policies = set(RetentionPolicy.objects.values_list("table", flat=True))
    return [
        {"table": name, "retention_days": days, "source": "policy" if name in policies else "default"}
        for name, days in retention_days().items()
    ]
