"""The per-process cache of API keys (core/epochs.py): ingestion looks a key up on every batch,
so a known key is kept by its hash until any key is made, changed, revoked or deleted, in any process.
Unknown keys are never kept, so guessing cannot fill the cache. The bump is attached to the model's
save/delete signals so that services and the admin alike invalidate it; the receivers do nothing else."""

from django.db.models.signals import post_delete, post_save

from core.epochs import EpochCache

API_KEYS = EpochCache("metrics-keys", max_entries=1000)


def _changed(**kwargs) -> None:
    API_KEYS.bump()


def connect() -> None:
    """Called once from MetricsConfig.ready()."""
    from metrics.models import ApiKey

    post_save.connect(_changed, sender=ApiKey, dispatch_uid="metrics-key-cache-save")
    post_delete.connect(_changed, sender=ApiKey, dispatch_uid="metrics-key-cache-delete")
