"""The MCP protocol revisions the registry's gateway speaks: the ones with the `initialize` handshake and
2026-07-28, which has none (`server/discover`, every request standing alone). One list for the gateway and
for the documents that describe it (MCP Server Cards)."""

HANDSHAKE_VERSIONS = ("2025-03-26", "2025-06-18", "2025-11-25")
STATELESS_VERSION = "2026-07-28"
SPOKEN = (*HANDSHAKE_VERSIONS, STATELESS_VERSION)
