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


def latest_mark(versions: list[ServerVersion]) -> None:
    """Mark the latest of each name among `versions` (all the versions of those names) and only it, in
    two statements whatever the number of names; the listings are rebuilt after the commit."""
    by_name: dict[str, list[ServerVersion]] = {}
    for version in versions:
        by_name.setdefault(version.name, []).append(version)
    if not by_name:
        return
    winners = [latest_of(rows).id for rows in by_name.values()]
    ServerVersion.objects.filter(name__in=list(by_name), is_latest=True).exclude(id__in=winners).update(
        is_latest=False
    )
    ServerVersion.objects.filter(id__in=winners, is_latest=False).update(is_latest=True)
    LISTINGS.bump()


def latest_recompute(name: str) -> None:
    """Mark the latest version of `name` and only it."""
    latest_mark(
        list(ServerVersion.objects.filter(name=name).only("id", "name", "version", "published_at", "status"))
    )
