"""Every migration that writes rows (RunPython) is one the tests restore after a transactional test's
flush (tests/conftest.py DATA_MIGRATIONS): a new one must be added there, or tests that follow a
transactional test in the same xdist worker would not see its rows."""

from pathlib import Path

from django.apps import apps
from django.db.migrations import RunPython
from django.db.migrations.loader import MigrationLoader

from tests.conftest import DATA_MIGRATIONS, PROJECT_DIR, ROW_CHANGES


def test_every_data_migration_of_the_project_is_restored_for_the_tests():
    loader = MigrationLoader(None, ignore_no_migrations=True)
    ours = {config.label for config in apps.get_app_configs() if Path(config.path).parent == PROJECT_DIR}
    writing = {
        migration.__module__
        for (label, _), migration in loader.disk_migrations.items()
        if label in ours and any(isinstance(operation, RunPython) for operation in migration.operations)
    }

    assert writing == {*DATA_MIGRATIONS, *ROW_CHANGES}
