"""Writes of the metrics service, one module per sub-domain; everything is re-exported here."""

from metrics.services.ingestion import IngestResult, metrics_flush, metrics_ingest, rows_store
from metrics.services.keys import api_key_create, api_key_revoke, api_key_update, api_keys_from_environment
from metrics.services.retention import retention_apply, retention_policy_delete, retention_policy_set

__all__ = [
    "IngestResult",
    "api_key_create",
    "api_key_revoke",
    "api_key_update",
    "api_keys_from_environment",
    "metrics_flush",
    "metrics_ingest",
    "retention_apply",
    "retention_policy_delete",
    "retention_policy_set",
    "rows_store",
]
