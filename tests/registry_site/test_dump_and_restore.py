"""An operator's backup: a pg_dump of the registry's database restores with psql into an empty database,
stopping at the first error. pg_dump restores with an empty search path, so a function body that names
another function unqualified broke the restore of the index built on it."""

import subprocess
from pathlib import Path

import pgserver
import pytest
from django.db import connection

PG_BIN = Path(pgserver.__file__).parent / "pginstall" / "bin"

pytestmark = pytest.mark.django_db


def _env() -> dict:
    params = connection.get_connection_params()
    return {
        "PGHOST": str(params.get("host") or ""),
        "PGPORT": str(params.get("port") or ""),
        "PGUSER": str(params.get("user") or ""),
        "PGPASSWORD": str(params.get("password") or ""),
    }


def test_a_dump_of_the_database_restores_into_an_empty_one(tmp_path):
    name = f"{connection.settings_dict['NAME']}_restored"
    dump = tmp_path / "registry.sql"
    subprocess.run(
        [
            PG_BIN / "pg_dump",
            "--no-owner",
            "--no-privileges",
            "--file",
            dump,
            connection.settings_dict["NAME"],
        ],
        env=_env(),
        check=True,
        capture_output=True,
    )
    with connection._nodb_cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')
        cursor.execute(f'CREATE DATABASE "{name}"')
    try:
        restored = subprocess.run(
            [PG_BIN / "psql", "-q", "-v", "ON_ERROR_STOP=1", "-d", name, "-f", dump],
            env=_env(),
            capture_output=True,
            text=True,
        )
        indexes = subprocess.run(
            [
                PG_BIN / "psql",
                "-tA",
                "-d",
                name,
                "-c",
                "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'servers_server_%trigrams' ORDER BY 1",
            ],
            env=_env(),
            capture_output=True,
            text=True,
        )
    finally:
        with connection._nodb_cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    assert (restored.returncode, restored.stderr) == (0, "")
    assert indexes.stdout.split() == ["servers_server_description_trigrams", "servers_server_name_trigrams"]
