"""The one way writes ask for a server's embedding (the text and the work: search/)."""

from core.embeddings import EMBED_SERVERS_TASK, embed_after_commit
from servers.models import Server

# Changing any of these changes what semantic search finds a server by (search.texts.server_text; tools
# are tracked apart).
EMBEDDED_FIELDS = {"name", "description", "tags"}


def server_embedding_refresh(server: Server) -> None:
    """Embed `server` and its dirty tools once the current transaction commits (in this request when the
    model is here, else in the worker); the 30-second beat sweep catches anything this misses."""
    embed_after_commit(EMBED_SERVERS_TASK, [server.pk])
