"""The migrations that seal operators' shared headers (servers 0017, agents 0004) lose nothing: on a
database of its own, migrated to just before them, a server and an agent with plaintext outbound headers
are written by the models as they were then; after `migrate` their headers are sealed (no plaintext
column left) and open as they were, the agent in the `shared_headers` mode; migrating back opens them
into the plaintext columns again."""

import json
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.conf import settings
from django.db import connection

from tests.catalog.peer import _admin_connection
from tests.conftest import run_manage
from tests.processes import child_env

pytestmark = pytest.mark.django_db

BEFORE = """
from django.db import connection
from django.db.migrations.loader import MigrationLoader
state = MigrationLoader(connection).project_state([("servers", "0016_trigram_function_body_parsed"),
                                                   ("agents", "0003_agent_health_and_credentials")])
Server, Agent = state.apps.get_model("servers", "Server"), state.apps.get_model("agents", "Agent")
Server.objects.create(path="/shared", name="Shared", proxy_pass_url="https://mcp.example.test/mcp",
                      upstream_auth="shared_headers", headers={"X-Api-Key": "server-key"})
Agent.objects.create(path="/agent", name="Agent", description="d", url="https://agent.example.test/a2a",
                     version="1", headers={"Authorization": "Bearer agent-key"})
"""

AFTER = """
import json
from django.db import connection
from servers.models import Server
from agents.models import Agent
with connection.cursor() as cursor:
    cursor.execute("SELECT column_name FROM information_schema.columns "
                   "WHERE table_name IN ('servers_server', 'agents_agent') AND column_name = 'headers'")
    plaintext_columns = cursor.fetchall()
server, agent = Server.objects.get(path="/shared"), Agent.objects.get(path="/agent")
sealed = [server.sealed_headers[:3], agent.sealed_headers[:3]]
print(json.dumps({"columns": plaintext_columns, "server": server.headers, "agent": agent.headers,
                  "mode": agent.upstream_auth, "sealed": sealed}))
"""

BACK = """
import json
from django.db import connection
with connection.cursor() as cursor:
    cursor.execute(
        "SELECT headers::text FROM servers_server UNION ALL SELECT headers::text FROM agents_agent"
    )
    print(json.dumps(sorted((json.loads(row[0]) for row in cursor.fetchall()), key=json.dumps)))
"""


@pytest.fixture
def database():
    name = f"{connection.settings_dict['NAME']}_sealing"
    with _admin_connection() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    url = urlunsplit(urlsplit(settings.DATABASE_URL)._replace(path=f"/{name}"))
    yield child_env() | {"DATABASE_URL": url}
    with _admin_connection() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def manage(env, *args) -> str:
    done = run_manage(*args, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def test_sealing_the_shared_headers_loses_nothing_and_migrating_back_restores_them(database):
    manage(database, "migrate", "servers", "0016", "--no-input")
    manage(database, "migrate", "agents", "0003", "--no-input")
    manage(database, "shell", "-c", BEFORE)

    manage(database, "migrate", "--no-input")
    after = json.loads(manage(database, "shell", "-c", AFTER))
    manage(database, "migrate", "agents", "0003", "--no-input")  # connections 0004 goes back first
    manage(database, "migrate", "servers", "0016", "--no-input")
    back = json.loads(manage(database, "shell", "-c", BACK))

    assert after == {
        "columns": [],
        "server": {"X-Api-Key": "server-key"},
        "agent": {"Authorization": "Bearer agent-key"},
        "mode": "shared_headers",
        "sealed": ["v1.", "v1."],
    }
    assert back == [{"Authorization": "Bearer agent-key"}, {"X-Api-Key": "server-key"}]
