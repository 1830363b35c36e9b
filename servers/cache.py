"""Per-process caches of server reads (registry_site/epochs.py).

- ROUTES: which server a gateway path names, with what the gateway needs of it. Saving or deleting a
  server moves its epoch when it changes a field a route holds; health and tool bookkeeping do not.
- LISTINGS: whole answers built from every server (the public discovery document). Any save or delete of
  a server moves its epoch (a check that finds new tools saves the server too)."""

from __future__ import annotations

from django.db.models.signals import post_delete, post_save

from registry_site.epochs import EpochCache

ROUTES = EpochCache("servers")
ROUTE_FIELDS = frozenset({"path", "is_enabled", "proxy_pass_url", "headers"})
LISTINGS = EpochCache("server-listings", max_entries=100)
# Saves that change nothing a listing shows.
UNLISTED_FIELDS = frozenset({"embedding", "embedding_dirty"})


def _saved(sender, instance, update_fields=None, **kwargs) -> None:
    if not update_fields or set(update_fields) - UNLISTED_FIELDS:
        LISTINGS.bump()
    if update_fields and not (set(update_fields) & ROUTE_FIELDS):
        return
    ROUTES.bump()


def _deleted(**kwargs) -> None:
    ROUTES.bump()
    LISTINGS.bump()


def connect() -> None:
    """Called once from ServersConfig.ready()."""
    from servers.models import Server

    post_save.connect(_saved, sender=Server, dispatch_uid="route-cache-save")
    post_delete.connect(_deleted, sender=Server, dispatch_uid="route-cache-delete")
