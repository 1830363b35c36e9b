"""Celery tasks of the agents app. Tasks take ids, never model instances, and are safe to run twice."""

from celery import shared_task


@shared_task(name="agents.embed_agents_task", ignore_result=True)
def embed_agents_task(agent_ids: list[int] | None = None) -> int:
    """Embed the given agents, or every agent marked dirty; returns how many were embedded."""
    from agents.embeddings import agents_embed

    return agents_embed(agent_ids)
