from catalog.services.lifecycle import (
    StatusChange,
    server_status_set,
    version_status_set,
    versions_detach,
)
from catalog.services.publishing import CatalogRefused, version_publish

__all__ = [
    "CatalogRefused",
    "StatusChange",
    "server_status_set",
    "version_publish",
    "version_status_set",
    "versions_detach",
]
