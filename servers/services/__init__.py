"""Writes for servers, one module per sub-domain; everything is re-exported here."""

from servers.services.embeddings import server_embedding_refresh
from servers.services.health import server_health_record
from servers.services.registry import (
    EDITABLE_FIELDS,
    ServerConflict,
    server_create,
    server_delete,
    server_refresh,
    server_register,
    server_toggle,
    server_update,
    servers_refresh,
)

__all__ = [
    "EDITABLE_FIELDS",
    "ServerConflict",
    "server_create",
    "server_delete",
    "server_embedding_refresh",
    "server_health_record",
    "server_refresh",
    "server_register",
    "server_toggle",
    "server_update",
    "servers_refresh",
]
