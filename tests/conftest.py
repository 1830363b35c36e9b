"""Shared fixtures. The database is the real embedded PostgreSQL (var/test), Redis the real embedded
Redis; nothing is mocked."""

import gc
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from tests.factories import ServerFactory, UserFactory

PROJECT_DIR = Path(__file__).resolve().parent.parent


@pytest.fixture
def user(db):
    return UserFactory()


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


# Ports handed out by `unused_port`, one file each, so no other test (another xdist worker, another run)
# is handed the same port while the child that will bind it starts (migrations can take seconds).
PORT_RESERVATIONS = Path(tempfile.gettempdir()) / f"registry-test-ports-{os.getuid()}"
PORT_RESERVATION_SECONDS = 900


def unused_port(taken: frozenset[int] = frozenset()) -> int:
    """A loopback port nothing listens on and no other test was handed lately, for a child process to
    bind later. It is chosen below the kernel's ephemeral range: a port `bind(0)` hands out is one the
    kernel may also give an outgoing connection (a child's client of PostgreSQL or Redis) before the child
    binds it, which made a test fail with "Address already in use"; and it is reserved: two workers that
    drew the same free port both bound it later, and one child failed the same way."""
    low = min(_ephemeral_low(), 65536)
    PORT_RESERVATIONS.mkdir(exist_ok=True)
    for _ in range(1000):
        port = random.randrange(20000, low) if low > 20100 else random.randrange(low - 1000, low)
        if port in taken or not _reserved(port):
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free loopback port below the ephemeral range")


def _reserved(port: int) -> bool:
    """Reserve `port` for this test; False when another test holds a reservation younger than
    PORT_RESERVATION_SECONDS (an older one is stale and taken over)."""
    path = PORT_RESERVATIONS / str(port)
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        try:
            if time.time() - path.stat().st_mtime < PORT_RESERVATION_SECONDS:
                return False
            os.utime(path)  # stale: a later contender sees it fresh again
            return True
        except FileNotFoundError:
            return False


@pytest.fixture
def free_port() -> int:
    return unused_port()


def clean_env(**overrides) -> dict:
    """The environment for a child `manage.py`: no inherited registry settings but those given."""
    names = (
        "DATABASE_URL",
        "REDIS_URL",
        "SECRET_KEY",
        "JWT_SIGNING_KEY",
        "DJANGO_SETTINGS_MODULE",
        "REGISTRY_VAR_DIR",
    )
    env = {k: v for k, v in os.environ.items() if k not in names and not k.startswith("ADMIN_")}
    env.update({k: str(v) for k, v in overrides.items()})
    return env


def run_manage(*args, env: dict, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="session")
def django_db_setup(request, django_test_environment, django_db_blocker, django_db_modify_db_settings):
    """pytest-django's, but an xdist worker's database is a copy of a template the run migrates once
    (tests/databases.py)."""
    from django.test.utils import setup_databases, teardown_databases

    from tests import databases

    worker = getattr(request.config, "workerinput", None)
    with django_db_blocker.unblock():
        if worker is None:
            databases.without_durability()
            made = setup_databases(verbosity=0, interactive=False, serialized_aliases=set())
        else:
            made = databases.cloned_test_database(worker["testrunuid"])
    yield
    with django_db_blocker.unblock():
        teardown_databases(made, verbosity=0)


def _fixture_teardown_emptying(flush):
    """TransactionTestCase's teardown, with the tables emptied by tests/databases.py `emptied` where
    it can (a plain transactional test) and by `flush` where it cannot."""
    from tests import databases

    def teardown(self):
        if self.reset_sequences or self.serialized_rollback or self.available_apps is not None:
            return flush(self)
        if not all(databases.emptied(alias) for alias in self._databases_names(include_mirrors=False)):
            flush(self)

    return teardown


@pytest.fixture(scope="session", autouse=True)
def _transactional_tests_emptied_fast(django_db_setup, django_db_blocker):
    from django.test import TransactionTestCase

    from tests import databases

    with django_db_blocker.unblock():
        databases.note_fresh_tables("default")
    flush = TransactionTestCase._fixture_teardown
    TransactionTestCase._fixture_teardown = _fixture_teardown_emptying(flush)
    yield
    TransactionTestCase._fixture_teardown = flush


DATA_MIGRATIONS = (
    "accounts.migrations.0007_system_groups",
    "accounts.migrations.0008_oauth_audit_public_group",
)
# Data migrations that change rows already there and write none on a fresh install: nothing to restore.
ROW_CHANGES = (
    "servers.migrations.0017_sealed_shared_headers",
    "agents.migrations.0004_agent_upstream_auth",
)


@pytest.fixture(autouse=True)
def _rows_of_the_data_migrations(request):
    """A test in a transaction sees the rows the data migrations write (the system groups), as on a fresh
    install. A transactional test's flush deletes them; run serially, pytest-django ran every transactional
    test last, but an xdist worker runs whole files in the order it is handed them."""
    marker = request.node.get_closest_marker("django_db")
    transactional = marker is not None and (marker.kwargs.get("transaction") or marker.args[:1] == (True,))
    if transactional or "transactional_db" in request.fixturenames or "live_server" in request.fixturenames:
        return
    if marker is None and "db" not in request.fixturenames:
        return
    import importlib

    from django.apps import apps
    from django.db.migrations import RunPython

    request.getfixturevalue("db")
    for name in DATA_MIGRATIONS:
        migration = importlib.import_module(name)
        for operation in migration.Migration.operations:
            if isinstance(operation, RunPython):
                operation.code(apps, None)


@pytest.fixture(autouse=True)
def _fresh_redis(settings):
    """Each test starts with an empty Redis (the test servers' own, under var/test)."""
    import redis

    from core.epoch_watch import WATCH

    redis.Redis.from_url(settings.REDIS_URL).flushdb()
    WATCH.forget()  # what was pushed before the flush
    yield


@pytest.fixture(autouse=True)
def _uses_of_this_test_only():
    """Credentials' uses noted by a test are not written into the next test's database (nor at exit)."""
    from accounts.last_used import USES

    USES.reset()
    yield
    USES.reset()


@pytest.fixture
def redis_down(settings):
    """Every Redis client of this process points at a port nothing listens on."""
    port = unused_port()
    from core import redis_clients

    settings.REDIS_URL = f"redis://127.0.0.1:{port}/0"
    redis_clients.sync_client.cache_clear()
    yield
    redis_clients.sync_client.cache_clear()


@pytest.fixture
def scope_factory(db):
    """Make a scope granted to a group (created when missing)."""
    from django.contrib.auth.models import Group

    from accounts.models import Scope

    def make(name, *, group=None, server_rules=(), ui=None, publish_names=()):
        scope = Scope.objects.create(
            name=name,
            server_rules=list(server_rules),
            ui_permissions=ui or {},
            publish_names=list(publish_names),
        )
        if group:
            scope.groups.add(Group.objects.get_or_create(name=group)[0])
        return scope

    return make


@pytest.fixture
def member(db):
    """A user in the given groups."""
    from django.contrib.auth.models import Group

    def make(username, *groups, **fields):
        user = UserFactory(username=username, **fields)
        user.groups.set([Group.objects.get_or_create(name=name)[0] for name in groups])
        return user

    return make


@pytest.fixture
def token_for(db):
    """A registry access token for `user`, optionally limited to `scopes`; an administrator's token
    unlimited by scopes administers (asked for explicitly, as the token page and API require)."""
    from accounts.choices import AuthMethod
    from accounts.principal import principal_for_user
    from accounts.services import user_token_issue

    def make(user, scopes=None):
        principal = principal_for_user(user, auth_method=AuthMethod.SESSION)
        grant = user_token_issue(
            principal=principal,
            requested_scopes=scopes,
            expires_in_hours=1,
            description="test",
            admin=principal.is_admin and scopes is None,
        )
        return grant.access_token

    return make


@pytest.fixture
def asgi_request(transactional_db):
    """Send one HTTP request through a real ASGI entry of the project ("registry" or "metrics"): its
    guard, middleware and views, as a server would call them. Views run in the ASGI app's own threads,
    hence the transactional database."""
    import asyncio

    import httpx

    def send(service: str, method: str, url: str, **kwargs) -> httpx.Response:
        if service == "metrics":
            from registry_site.metrics_asgi import application
        else:
            from registry_site.asgi import application

        async def go():
            transport = httpx.ASGITransport(app=application)
            async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
                return await client.request(method, url, **kwargs)

        return asyncio.run(go())

    return send


@pytest.fixture
def timer(member, scope_factory):
    """A user who may initialize, list and call `now` on /currenttime (and nothing on /weather)."""
    ServerFactory(path="/currenttime")
    ServerFactory(path="/weather")
    scope_factory(
        "time-exec",
        group="timers",
        server_rules=[
            {"server": "currenttime", "methods": ["initialize", "tools/list", "tools/call"], "tools": ["now"]}
        ],
    )
    return member("tim", "timers")


def pytest_addoption(parser):
    parser.addoption(
        "--store-durations",
        action="store_true",
        help="write each test's seconds to tests/durations.json, which orders the work of a parallel run",
    )


# A test process allocates much and frees most of it by reference counting, so Python's default (a
# collection every 700 net allocations) walks the same young objects again and again. Collecting every
# 50,000 instead, the API tests' files took about a sixth less CPU, and a warm run of the suite 16:28 of
# CPU instead of 17:27; a cycle a test leaves waits a little longer to be freed.
GC_THRESHOLDS = (50_000, 50, 100)


def pytest_configure(config):
    """The controller of a parallel run names the run and starts migrating its template database at once
    (tests/databases.py), while the workers start; with --store-durations it records the tests' seconds
    (tests/scheduling.py)."""
    gc.set_threshold(*GC_THRESHOLDS)
    if getattr(config, "workerinput", None) is None and config.getoption("store_durations"):
        from tests.scheduling import DurationRecorder

        config.pluginmanager.register(DurationRecorder(), "duration-recorder")
    if getattr(config, "workerinput", None) is None and config.getoption("numprocesses", default=None):
        from tests import databases

        config.option.testrunuid = config.option.testrunuid or uuid.uuid4().hex
        config._template_maker = databases.make_template_ahead(config.option.testrunuid)


def pytest_collection_finish(session):
    """What collection imported (modules, test items) lives as long as the process: full collections skip
    it from now on."""
    gc.freeze()


def pytest_unconfigure(config):
    maker = getattr(config, "_template_maker", None)
    if maker is not None and maker.poll() is None:  # a run that ended first (collection only, an error)
        maker.terminate()
        maker.wait()


def pytest_xdist_make_scheduler(config, log):
    from tests.scheduling import FileOrFolderScheduling

    return FileOrFolderScheduling(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item, settings):
    from tests.timeouts import start_timer

    return start_timer(item, settings)
