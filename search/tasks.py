"""The embedding tasks. Writes queue them by name (core.embeddings: EMBED_*_TASK), and beat runs each
without ids as the backstop that embeds whatever is still dirty. Tasks take ids and are safe to run twice."""

from celery import shared_task
from celery.signals import worker_process_init

from core.embeddings import EMBED_AGENTS_TASK, EMBED_SERVERS_TASK, EMBED_SKILLS_TASK, EMBED_VERSIONS_TASK


@shared_task(name=EMBED_AGENTS_TASK, ignore_result=True)
def embed_agents_task(agent_ids: list[int] | None = None) -> int:
    """Embed the given agents, or every agent marked dirty; returns how many were embedded."""
    from search.services import agents_embed

    return agents_embed(agent_ids)


@shared_task(name=EMBED_SERVERS_TASK, ignore_result=True)
def embed_servers_task(server_ids: list[int] | None = None) -> int:
    """Embed the given servers and their tools, or every dirty server and tool; returns how many rows."""
    from search.services import servers_embed, tools_embed

    return servers_embed(server_ids) + tools_embed(server_ids=server_ids)


@shared_task(name=EMBED_VERSIONS_TASK, ignore_result=True)
def embed_versions_task() -> int:
    """Embed the latest catalog versions still marked dirty (publishes, syncs); one sweep at a time."""
    from search.services import versions_embed

    return versions_embed()


@shared_task(name=EMBED_SKILLS_TASK, ignore_result=True)
def embed_skills_task(skill_ids: list[int] | None = None) -> int:
    """Embed the given skills, or every skill marked dirty; returns how many were embedded."""
    from search.services import skills_embed

    return skills_embed(skill_ids)


@worker_process_init.connect
def _warm_up_embeddings(**kwargs) -> None:
    """With EMBEDDINGS_IN_REQUEST off the worker embeds every write, so each worker process loads the
    model as it starts (5–13 s, in the background) and the first registration after a start is searchable
    in seconds. On (the default), web processes embed their own writes and a worker process loads the
    model only when an embedding task reaches it (bulk imports, rows a web process could not embed): an
    idle worker process then holds no model (about 450 MB less each)."""
    from django.conf import settings

    from core.embeddings import warm_up

    if not settings.EMBEDDINGS_IN_REQUEST:
        warm_up()
