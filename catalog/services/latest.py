"""Two things every write of a server's versions does inside its transaction: hold the server's lock,
and move `isLatest` to the version the rule picks (catalog/versions.py)."""

from django.db import connection

from catalog.models import ServerVersion
from catalog.versions import latest_of
from servers.cache import LISTINGS


def name_lock(name: str) -> None:
    """Serialise writes of one server's versions until the transaction ends (two first publishes of a
    name racing would otherwise both mark themselves latest)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"catalog:{name}"])


def latest_recompute(name: str) -> None:
    """Mark the latest version of `name` and only it; the listings are rebuilt after the commit."""
    versions = list(ServerVersion.objects.filter(name=name).only("id", "version", "published_at", "status"))
    winner = latest_of(versions)
    winner_id = winner.id if winner is not None else None
    ServerVersion.objects.filter(name=name, is_latest=True).exclude(id=winner_id).update(is_latest=False)
    if winner_id is not None:
        ServerVersion.objects.filter(id=winner_id, is_latest=False).update(is_latest=True)
    LISTINGS.bump()
