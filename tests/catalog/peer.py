"""A second instance of the registry on loopback: its own database (beside the test database, in the
same embedded PostgreSQL), its own Redis database and namespace (`io.peer/`), started as `make run`
starts a web process. Tests publish to it with mcp-publisher's requests and mirror it."""

from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

import psycopg
from django.conf import settings
from django.db import connection

from tests.conftest import run_manage
from tests.databases import copied_template
from tests.processes import ProcessGroup, child_env, free_ports, wait_healthy

ISSUE_TOKEN = """
from accounts.choices import AuthMethod
from accounts.models import User
from accounts.principal import principal_for_user
from accounts.services import user_token_issue
user = User.objects.create(username="peer-admin", is_superuser=True, is_staff=True)
grant = user_token_issue(
    principal=principal_for_user(user, auth_method=AuthMethod.SESSION),
    requested_scopes=None, expires_in_hours=2, description="mirror tests", admin=True,
)
print(grant.access_token)
"""


@dataclass
class Peer:
    url: str
    token: str
    database_url: str
    env: dict = field(default_factory=dict)  # the peer's settings, for `manage.py` commands of its own


def _admin_connection():
    params = connection.get_connection_params()
    return psycopg.connect(**(params | {"dbname": "postgres"}), autocommit=True)


def start_peer(log_dir, *, env_extra: dict | None = None, setup: str = "") -> tuple[Peer, ProcessGroup, str]:
    """The peer, migrated (a copy of the run's migrated template when there is one), `setup` (Python for
    `manage.py shell`) run and its administrator's token issued; `env_extra` adds settings of its own."""
    name = f"{connection.settings_dict['NAME']}_peer"
    migrated = copied_template(name)  # the run's migrated schema, when there is one to copy
    if not migrated:
        with _admin_connection() as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.execute(f'CREATE DATABASE "{name}"')
    database_url = urlunsplit(urlsplit(settings.DATABASE_URL)._replace(path=f"/{name}"))
    redis_url = urlunsplit(urlsplit(settings.REDIS_URL)._replace(path="/14"))
    env = child_env() | {"DATABASE_URL": database_url, "REDIS_URL": redis_url, "REGISTRY_NAMESPACE": "peer"}
    env |= env_extra or {}
    if not migrated:
        done = run_manage("migrate", "--no-input", env=env, timeout=300)
        assert done.returncode == 0, done.stderr
    issued = run_manage("shell", "-c", f"{setup}\n{ISSUE_TOKEN}", env=env)  # the token printed last
    assert issued.returncode == 0, issued.stderr
    (port,) = free_ports(1)
    group = ProcessGroup(log_dir)
    process = group.web("peer", port, "registry_site.asgi:application", env=env)
    try:
        wait_healthy(port, process)
    except AssertionError:
        group.stop()
        raise
    token = issued.stdout.strip().splitlines()[-1]
    return Peer(f"http://127.0.0.1:{port}", token, database_url, env), group, name


def stop_peer(group: ProcessGroup, name: str) -> None:
    group.stop()
    with _admin_connection() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
