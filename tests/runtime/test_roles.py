"""The container image's runtime contract: `python -m runtime.roles <role>` starts each role with
the production settings (tests/catalog/peer.py and the process tests start web roles the same way)."""

import subprocess
import sys

import pytest
import requests

from tests.conftest import PROJECT_DIR
from tests.processes import ProcessGroup, child_env, free_ports, wait_healthy

pytestmark = pytest.mark.django_db(transaction=True)


def production_env(**extra) -> dict:
    return (
        child_env()
        | {
            "DJANGO_SETTINGS_MODULE": "registry_site.settings.production",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "REGISTRY_HOST": "127.0.0.1",
            "WEB_CONCURRENCY": "1",
            "METRICS_CONCURRENCY": "1",
        }
        | {key: str(value) for key, value in extra.items()}
    )


def test_an_unknown_role_is_refused_with_the_list_of_roles():
    answer = subprocess.run(
        [sys.executable, "-m", "runtime.roles", "webserver"],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
    )

    assert answer.returncode == 1
    assert (
        answer.stderr.strip() == "usage: python -m runtime.roles {web|metrics|worker|beat|exporter|migrate}"
    )


def test_the_web_and_metrics_roles_serve_with_the_production_settings(tmp_path):
    web_port, metrics_port = free_ports(2)
    env = production_env(REGISTRY_PORT=web_port, METRICS_SERVICE_PORT=metrics_port)
    group = ProcessGroup(tmp_path)
    try:
        web = group.start("web", "runtime.roles", "web", env=env)
        metrics = group.start("metrics", "runtime.roles", "metrics", env=env)
        wait_healthy(web_port, web)
        wait_healthy(metrics_port, metrics)
        answer = requests.get(f"http://127.0.0.1:{web_port}/health", timeout=10)
    finally:
        group.stop()

    assert answer.json() == {"status": "healthy", "service": "mcp-gateway-registry"}
    assert answer.headers.get("X-Content-Type-Options") == "nosniff"  # production's settings, not the tests'


def test_the_migrate_role_applies_migrations_and_ensures_the_admin(tmp_path):
    env = production_env(ADMIN_USER="ops-admin", ADMIN_PASSWORD="a long enough password for ops")

    answer = subprocess.run(
        [sys.executable, "-m", "runtime.roles", "migrate"],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
    )

    from accounts.models import User

    assert answer.returncode == 0, answer.stderr
    admin = User.objects.get(username="ops-admin")
    # Hashed by production's hasher (the tests' own settings hash with MD5 and cannot check it).
    assert (admin.is_superuser, admin.password.split("$")[0]) == (True, "pbkdf2_sha256")
