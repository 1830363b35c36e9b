"""The per-process cache of gateway routes (registry_site/epochs.py): which server a gateway path names,
with what the gateway needs of it. Saving or deleting a server moves the epoch when it changes a field a
route holds; health and tool bookkeeping do not (the receivers do nothing else)."""

from __future__ import annotations

from django.db.models.signals import post_delete, post_save

from registry_site.epochs import EpochCache

ROUTES = EpochCache("servers")
ROUTE_FIELDS = frozenset({"path", "is_enabled", "proxy_pass_url", "headers"})


def _saved(sender, instance, update_fields=None, **kwargs) -> None:
    if update_fields and not (set(update_fields) & ROUTE_FIELDS):
        return
    ROUTES.bump()


def _deleted(**kwargs) -> None:
    ROUTES.bump()


def connect() -> None:
    """Called once from ServersConfig.ready()."""
    from servers.models import Server

    post_save.connect(_saved, sender=Server, dispatch_uid="route-cache-save")
    post_delete.connect(_deleted, sender=Server, dispatch_uid="route-cache-delete")
