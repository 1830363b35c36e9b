"""Celery tasks of the agents app: health checks on the servers' schedule and policy (servers/recheck.py).
Tasks take ids, never model instances, and are safe to run twice."""

import time

from celery import shared_task


@shared_task(name="agents.check_agent_task", ignore_result=True)
def check_agent_task(agent_id: int) -> None:
    """Check one enabled agent (agents/health.py) and store the outcome."""
    from agents.health import check_agent
    from agents.models import Agent
    from agents.services import agent_health_record
    from core.metric_choices import MetricType
    from core.metrics_client import emit

    agent = Agent.objects.enabled().defer("embedding").filter(pk=agent_id).first()
    if agent is None:
        return
    started = time.perf_counter()
    result = check_agent(agent)
    agent_health_record(agent=agent, result=result)
    emit(
        MetricType.HEALTH_CHECK,
        duration_ms=(time.perf_counter() - started) * 1000,
        dimensions={"server": f"{agent.path}/a2a", "status": str(result.status), "num_tools": 0},
    )


@shared_task(name="agents.sweep_agent_health_task", ignore_result=True)
def sweep_agent_health_task() -> int:
    """Queue one check per enabled agent, least recently checked first; each expires before the next
    sweep. Returns how many were queued."""
    from django.conf import settings
    from django.db.models import F

    from agents.models import Agent

    expires = max(1, settings.HEALTH_CHECK_INTERVAL_SECONDS - 1)
    order = (F("last_checked_at").asc(nulls_first=True), "pk")
    ids = list(Agent.objects.enabled().order_by(*order).values_list("pk", flat=True))
    for agent_id in ids:
        check_agent_task.apply_async((agent_id,), expires=expires)
    return len(ids)


@shared_task(name="agents.recheck_unhealthy_agents_task", ignore_result=True)
def recheck_unhealthy_agents_task() -> int:
    """Queue a check of every unhealthy agent whose re-check is due, backing off as servers do."""
    from django.conf import settings
    from django.utils import timezone

    from agents.models import Agent
    from servers.recheck import due_for_recheck

    expires = max(1, settings.HEALTH_RECHECK_MIN_SECONDS - 1)
    ids = list(due_for_recheck(Agent.objects.all(), timezone.now()).values_list("pk", flat=True))
    for agent_id in ids:
        check_agent_task.apply_async((agent_id,), expires=expires)
    return len(ids)
