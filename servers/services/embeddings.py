"""The one way writes ask for a server's embedding (the work itself: servers/embeddings.py)."""

from celery import current_app

from core.embeddings import embed_after_commit
from servers.embeddings import EMBEDDED_FIELDS, servers_embed, tools_embed
from servers.models import Server

EMBED_TASK = "servers.embed_servers_task"  # queued by name: the tasks module calls these services

__all__ = ["EMBEDDED_FIELDS", "server_embedding_refresh", "servers_embed", "tools_embed"]


def server_embedding_refresh(server: Server) -> None:
    """Embed `server` and its dirty tools once the current transaction commits, in this request when the
    model is here (core.embeddings.embed_after_commit), else in the worker; the 30-second beat
    sweep catches anything this misses."""
    server_id = server.pk
    embed_after_commit(
        lambda: servers_embed([server_id]) + tools_embed(server_ids=[server_id]),
        lambda: current_app.send_task(EMBED_TASK, args=([server_id],)),
    )
