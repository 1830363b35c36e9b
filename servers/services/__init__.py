"""Writes for servers, one module per sub-domain; everything is re-exported here."""

from servers.services.checks import server_refresh, servers_refresh
from servers.services.embeddings import server_embedding_refresh
from servers.services.health import server_health_record
from servers.services.pins import tool_change_approve, tool_change_block
from servers.services.registry import (
    EDITABLE_FIELDS,
    ServerConflict,
    server_create,
    server_delete,
    server_register,
    server_toggle,
    server_update,
)
from servers.services.tool_blocks import tool_block, tool_unblock

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
    "tool_block",
    "tool_change_approve",
    "tool_change_block",
    "tool_unblock",
]
