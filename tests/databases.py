"""The test databases of a parallel run: the schema is migrated once, into a template database, and each
xdist worker's database (and each second registry a test starts: tests/catalog/peer.py) is a copy of it.
A copy takes a fraction of a second where migrating takes about 15 s of a core each time. The first
worker to come makes the template, under a lock the run's workers share; the others wait for it."""

from __future__ import annotations

import fcntl
from contextlib import contextmanager
from pathlib import Path

TEMPLATE_SUFFIX = "_template"
_template: str | None = None  # this run's template, once made


def template_database() -> str | None:
    """The migrated template's name when this process runs as an xdist worker, else None."""
    return _template


def cloned_test_database(shared: Path, run_id: str) -> tuple:
    """Point the default connection at this worker's copy of the run's migrated template (made first when
    no worker of the run has made it yet): the configuration `teardown_databases` takes."""
    global _template
    from django.db import connection
    from django.test.utils import setup_databases

    own = connection.settings_dict["TEST"]["NAME"]  # test_<name>_gw<n>
    template = own.rsplit("_", 1)[0] + TEMPLATE_SUFFIX
    ready = shared / f"test-database-{run_id}.ready"
    with _locked(shared / "test-database.lock"):
        if not ready.exists():
            connection.settings_dict["TEST"]["NAME"] = template
            made = setup_databases(verbosity=0, interactive=False, serialized_aliases=set())
            _disconnect()
            ((_, original_name, _),) = made
            connection.settings_dict["NAME"] = original_name
            ready.write_text(template)
        connection.settings_dict["TEST"]["NAME"] = own
        copy(template, own)
    _template = template
    original_name = connection.settings_dict["NAME"]
    _use(own)
    return [(connection, original_name, True)]


def copy(template: str, name: str) -> None:
    """`name` made anew as a copy of `template` (which nobody may be connected to)."""
    from django.db import connection

    with connection._nodb_cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        cursor.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')


def _use(name: str) -> None:
    from django.conf import settings
    from django.db import connection

    _disconnect()
    connection.settings_dict["NAME"] = name
    settings.DATABASES[connection.alias]["NAME"] = name


def _disconnect() -> None:
    """Every connection of this process to the current database closed, the pool's too."""
    from django.db import connection

    connection.close()
    if connection.alias in connection._connection_pools:  # `connection.pool` would open one
        connection.close_pool()


@contextmanager
def _locked(path: Path):
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# -- emptying the database after a transactional test ------------------------------------------------------

# What `flush` writes again after emptying everything (its post_migrate signal): kept instead, as long as a
# test has not changed them.
_KEPT = ("django_content_type", "auth_permission")
_emptying: dict[str, tuple] = {}  # database alias: (the DELETE statements, the kept tables' row counts)


def note_fresh_tables(alias: str) -> None:
    """What `emptied` deletes and keeps, read from the freshly migrated database of this process."""
    from django.db import connections

    connection = connections[alias]
    tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
    deletes = ";".join(
        f"DELETE FROM {connection.ops.quote_name(table)}" for table in sorted(tables) if table not in _KEPT
    )
    _emptying[alias] = (deletes, _counts(connection))


def emptied(alias: str) -> bool:
    """Every table of the models emptied as `flush` empties them, by one round trip of DELETEs (a TRUNCATE of
    every table and the post_migrate signal that follows cost about 0.5 s a test on this machine, and most
    tables hold no row); the content types and permissions are left as migrating wrote them. False when
    they were changed since, or a constraint refuses, and nothing was done: then `flush` must run."""
    from django.db import DatabaseError, connections, transaction

    if alias not in _emptying:
        return False
    connection = connections[alias]
    deletes, kept = _emptying[alias]
    try:
        with transaction.atomic(using=alias), connection.cursor() as cursor:
            if _counts(connection) != kept:
                return False
            cursor.execute(deletes)  # foreign keys are deferred: checked once, at the commit
    except DatabaseError:
        return False
    return True


def _counts(connection) -> tuple:
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(f"(SELECT count(*) FROM {table})" for table in _KEPT))
        return cursor.fetchone()
