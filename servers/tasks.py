"""Celery tasks of the servers app. Tasks take ids, never model instances, and are safe to run twice."""

from celery import shared_task
from celery.signals import worker_process_init


@shared_task(name="servers.check_server_task", ignore_result=True)
def check_server_task(server_id: int) -> None:
    """Check one server's health and discover its tools over a real MCP session."""
    from servers.health import check_and_record

    check_and_record(server_id)


@shared_task(name="servers.embed_servers_task", ignore_result=True)
def embed_servers_task(server_ids: list[int] | None = None) -> int:
    """Embed the given servers and their tools, or every dirty server and tool; returns how many rows
    were embedded."""
    from servers.services import servers_embed, tools_embed

    return servers_embed(server_ids) + tools_embed(server_ids=server_ids)


@worker_process_init.connect
def _warm_up_embeddings(**kwargs) -> None:
    """Each worker process loads the embedding model as it starts (5–13 s, in the background), so the
    first registration after a start is searchable in seconds rather than after a model load."""
    from registry_site.embeddings import warm_up

    warm_up()
