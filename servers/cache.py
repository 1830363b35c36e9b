"""Per-process caches of server reads (core/epochs.py).

- ROUTES: which server a gateway path names, with what the gateway needs of it. Saving or deleting a
  server moves its epoch when it changes a field a route holds; health and tool bookkeeping do not.
- LISTINGS: whole answers built from many servers (the public discovery document, /v0.1 pages). Any save
  or delete of a server moves its epoch (a check that finds new tools saves those too), except the
  saves of a health check, which a sweep makes for every server and which change statuses by the
  thousand when many servers go down at once: rebuilding every listing on each would cost every reader.
  Those move HEALTH instead. /v0.1 pages do not follow HEALTH: they expire by age
  (LISTING_CHECK_LAG_SECONDS), so a page's health status and `last_checked` may be that much older than
  the database's, never its tools or anything an operator wrote. The discovery document follows HEALTH
  (a status change shows at once) and otherwise expires with its public max-age, DISCOVERY_CACHE_TTL."""

from __future__ import annotations

from django.db.models.signals import post_delete, post_save

from core.epochs import EpochCache

ROUTES = EpochCache("servers")
ROUTE_FIELDS = frozenset({"path", "is_enabled", "proxy_pass_url", "sealed_headers", "upstream_auth", "tags"})
LISTINGS = EpochCache("server-listings", max_entries=256)
HEALTH = EpochCache("server-health", max_entries=1)  # only its epoch is used
# Saves that change nothing a listing shows (embeddings), and those of a health check
# (servers/services/health.py names the status fields only when they changed).
UNLISTED_FIELDS = frozenset({"embedding", "embedding_dirty"})
HEALTH_FIELDS = frozenset({"last_checked_at", "health_detail", "health_status", "unhealthy_since"})
LISTING_CHECK_LAG_SECONDS = 2.0
# What operators withhold of each server's tools (servers/trust.py), by server path.
TRUST = EpochCache("tool-trust")


def _saved(sender, instance, update_fields=None, **kwargs) -> None:
    changed = set(update_fields) if update_fields else None
    if changed is None or changed - UNLISTED_FIELDS - HEALTH_FIELDS:
        LISTINGS.bump()
    elif changed & {"health_status", "unhealthy_since"}:
        HEALTH.bump()
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
