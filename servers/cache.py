"""Per-process caches of server reads (registry_site/epochs.py).

- ROUTES: which server a gateway path names, with what the gateway needs of it. Saving or deleting a
  server moves its epoch when it changes a field a route holds; health and tool bookkeeping do not.
- LISTINGS: whole answers built from many servers (the public discovery document, /v0.1 pages). Any save
  or delete of a server moves its epoch (a check that finds new tools or changes a status saves those
  too), except a save that only records when a server was last checked, which a health sweep makes for
  every server: entries instead expire by age (LISTING_CHECK_LAG_SECONDS for /v0.1 pages, the
  document's own public max-age DISCOVERY_CACHE_TTL for discovery), so a listing's `last_checked` may
  be that much older than the database's, never its status, tools or anything an operator wrote."""

from __future__ import annotations

from django.db.models.signals import post_delete, post_save

from registry_site.epochs import EpochCache

ROUTES = EpochCache("servers")
ROUTE_FIELDS = frozenset({"path", "is_enabled", "proxy_pass_url", "headers"})
LISTINGS = EpochCache("server-listings", max_entries=256)
# Saves that change nothing a listing shows, or only the time of the last check (servers/services/health.py
# names a status only when it changed).
UNLISTED_FIELDS = frozenset({"embedding", "embedding_dirty", "last_checked_at", "health_detail"})
LISTING_CHECK_LAG_SECONDS = 2.0


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
