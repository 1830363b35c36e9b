"""The test databases of a parallel run: the schema is migrated once, into a template database, and each
xdist worker's database (and each second registry a test starts: tests/catalog/peer.py) is a copy of it.
A copy takes a fraction of a second where migrating takes about 15 s of a core each time. The run's
controller starts migrating the template in a process of its own as the run begins (`make_template_ahead`),
while the workers start and collect the tests; a worker that comes first makes it itself, under a lock the
run's processes share, and the others wait for it."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

TEMPLATE_SUFFIX = "_template"
_template: str | None = None  # this run's template, once made


def shared_directory() -> Path:
    """Where the run's processes meet: the lock, and a file per run naming its template once made."""
    shared = Path(tempfile.gettempdir()) / f"registry-test-databases-{os.getuid()}"
    shared.mkdir(exist_ok=True)
    return shared


def make_template_ahead(run_id: str) -> subprocess.Popen:
    """Start making the run's template in a process of its own (the run's controller calls it before the
    workers start): migrating then overlaps their start-up and collection instead of following it."""
    code = f"from tests.databases import _make_template; _make_template({run_id!r})"
    return subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).resolve().parent.parent)


def _make_template(run_id: str) -> None:
    import django

    django.setup()
    from django.db import connection

    parts = ["test", connection.settings_dict["NAME"], os.environ.get("TOX_PARALLEL_ENV", "")]
    made_template(run_id, "_".join(part for part in parts if part) + TEMPLATE_SUFFIX)
    _disconnect()


def made_template(run_id: str, template: str) -> str:
    """The run's migrated template, made now under `template`'s name unless a process of the run made it
    already (then its name, which the run's file keeps)."""
    from django.db import connection
    from django.test.utils import setup_databases

    shared = shared_directory()
    ready = shared / f"test-database-{run_id}.ready"
    with _locked(shared / "test-database.lock"):
        if not ready.exists():
            without_durability()
            own = connection.settings_dict["TEST"]["NAME"]
            connection.settings_dict["TEST"]["NAME"] = template
            made = setup_databases(verbosity=0, interactive=False, serialized_aliases=set())
            _disconnect()
            ((_, original_name, _),) = made
            connection.settings_dict["NAME"] = original_name
            connection.settings_dict["TEST"]["NAME"] = own
            ready.write_text(template)
        return ready.read_text()


def without_durability() -> None:
    """The embedded test server (var/test, never one of DATABASE_URL) skips flushing to disk: a test
    database that a crash would lose has nothing to lose, and every migration, commit and emptying
    otherwise waits for the disk."""
    if os.environ.get("DATABASE_URL"):
        return
    from django.db import connection

    with connection._nodb_cursor() as cursor:
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            cursor.execute(f"ALTER SYSTEM SET {setting} = off")
        cursor.execute("SELECT pg_reload_conf()")


def cloned_test_database(run_id: str) -> tuple:
    """Point the default connection at this worker's copy of the run's migrated template (made first when
    no process of the run has made it yet): the configuration `teardown_databases` takes."""
    global _template
    from django.db import connection

    own = connection.settings_dict["TEST"]["NAME"]  # test_<name>_gw<n>
    template = made_template(run_id, own.rsplit("_", 1)[0] + TEMPLATE_SUFFIX)
    with _locked(shared_directory() / "test-database.lock"):
        copy(template, own)
    _template = template
    original_name = connection.settings_dict["NAME"]
    _use(own)
    return [(connection, original_name, True)]


def copied_template(name: str) -> bool:
    """`name` made anew as a copy of the run's template (False, and nothing made, outside a parallel run).
    Under the run's lock: a copy fails while anything is connected to the template (`dumped_template`)."""
    if _template is None:
        return False
    with _locked(shared_directory() / "test-database.lock"):
        copy(_template, name)
    return True


def dumped_template(pg_dump: Path, target: Path) -> bool:
    """The run's template written to `target` as SQL, its tables and data without owners or grants and
    without the extensions it uses (False, and nothing written, outside a parallel run)."""
    if _template is None:
        return False
    from django.db import connection

    params = connection.get_connection_params()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PGHOST": str(params.get("host") or ""),
        "PGPORT": str(params.get("port") or ""),
        "PGUSER": str(params.get("user") or ""),
        "PGPASSWORD": str(params.get("password") or ""),
    }
    dump = [str(pg_dump), "--no-owner", "--no-privileges", "--schema=public", _template]
    with _locked(shared_directory() / "test-database.lock"):
        sql = subprocess.run(dump, env=env, check=True, capture_output=True, text=True, timeout=120).stdout
    # The schema named by --schema is created by the dump, and `public` exists in every database.
    target.write_text(sql.replace("\nCREATE SCHEMA public;\n", "\n", 1))
    return True


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
