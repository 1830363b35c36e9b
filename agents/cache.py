"""The per-process cache of which agents a gateway path names (core/epochs.py), so an A2A request is routed
without a query or a thread: ROUTES holds, by the candidate paths of a gateway path, every agent among them
(longest first) with the names of the groups that share it (its own and its owner's), from which the
visibility rule is decided in memory (agents/policies.py `agent_seen_by`). Any save or delete of an agent
and any change of its groups move its epoch; who is in which group is the principals' epoch, which the
gateway reads with it (gateway/epochs.py)."""

from __future__ import annotations

from django.db.models.signals import m2m_changed, post_delete, post_save

from core.epochs import EpochCache

ROUTES = EpochCache("agent-routes")
# Saves of a health check or an embedding change nothing the gateway routes by.
UNROUTED_FIELDS = frozenset(
    {"embedding", "embedding_dirty", "health_status", "health_detail", "last_checked_at", "unhealthy_since"}
)


def _saved(sender, instance, update_fields=None, **kwargs) -> None:
    if update_fields and set(update_fields) <= UNROUTED_FIELDS:
        return
    ROUTES.bump()


def _changed(**kwargs) -> None:
    ROUTES.bump()


def connect() -> None:
    """Called once from AgentsConfig.ready()."""
    from agents.models import Agent

    post_save.connect(_saved, sender=Agent, dispatch_uid="agent-routes-save")
    post_delete.connect(_changed, sender=Agent, dispatch_uid="agent-routes-delete")
    m2m_changed.connect(_changed, sender=Agent.groups.through, dispatch_uid="agent-routes-groups")
