"""Reads of the metrics service."""

from django.conf import settings

from core.epochs import MISSING
from metrics.cache import API_KEYS
from metrics.models import METRIC_TABLES, ApiKey, RetentionPolicy, key_hash


def api_key_for(raw: str | None) -> ApiKey | None:
    """The active key whose hash matches `raw`, or None (unknown, revoked or missing); a known key from
    this process's cache while no key has changed anywhere (metrics/cache.py)."""
    if not raw:
        return None
    digest = key_hash(raw.strip())
    epoch = API_KEYS.epoch()
    key = API_KEYS.get(digest, epoch)
    if key is MISSING:
        key = ApiKey.objects.filter(key_hash=digest, revoked_at__isnull=True).first()
        if key is not None:
            API_KEYS.put(digest, key, epoch)
    return key


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
