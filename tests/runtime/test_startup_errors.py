"""Bad configuration ends start-up with one clear line naming the variable, never a traceback."""

import socket

import pytest

from tests.conftest import clean_env, run_manage


def assert_one_line(stderr: str, *fragments: str) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr
    assert len(lines) == 1, stderr
    for fragment in fragments:
        assert fragment in lines[0]


def test_a_missing_secret_key_outside_the_embedded_default_stops_start_up():
    env = clean_env(
        DATABASE_URL="postgresql://registry@127.0.0.1:1/registry", REDIS_URL="redis://127.0.0.1:1/0"
    )

    result = run_manage("check", env=env)

    assert result.returncode == 2
    assert_one_line(result.stderr, "error: SECRET_KEY is not set")


@pytest.mark.parametrize("missing", ["DATABASE_URL", "REDIS_URL", "ALLOWED_HOSTS"])
def test_production_settings_name_each_missing_required_value(missing):
    values = {
        "DATABASE_URL": "postgresql://registry@127.0.0.1:1/registry",
        "REDIS_URL": "redis://127.0.0.1:1/0",
        "ALLOWED_HOSTS": "registry.example.test",
    }
    del values[missing]
    env = clean_env(
        DJANGO_SETTINGS_MODULE="registry_site.settings.production",
        SECRET_KEY="s" * 50,
        JWT_SIGNING_KEY="j" * 50,
        **values,
    )

    result = run_manage("check", env=env)

    assert result.returncode == 2
    assert_one_line(result.stderr, f"error: {missing} is not set")


def test_an_unreachable_database_url_stops_serve_with_one_line(free_port):
    env = clean_env(
        DATABASE_URL="postgresql://registry@127.0.0.1:1/registry",
        REDIS_URL="redis://127.0.0.1:1/0",
        SECRET_KEY="s" * 50,
        JWT_SIGNING_KEY="j" * 50,
        REGISTRY_PORT=free_port,
    )

    result = run_manage("serve", env=env)

    assert result.returncode == 1
    assert_one_line(result.stderr, "DATABASE_URL: cannot connect", "unset DATABASE_URL")


def test_an_unreachable_redis_url_stops_serve_with_one_line(free_port, settings):
    env = clean_env(
        DATABASE_URL=settings.DATABASE_URL,
        REDIS_URL="redis://127.0.0.1:1/0",
        SECRET_KEY="s" * 50,
        JWT_SIGNING_KEY="j" * 50,
        REGISTRY_PORT=free_port,
    )

    result = run_manage("serve", env=env)

    assert result.returncode == 1
    assert_one_line(result.stderr, "REDIS_URL: cannot reach", "unset REDIS_URL")


def test_a_port_in_use_stops_serve_with_one_line(settings):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = clean_env(
            DATABASE_URL=settings.DATABASE_URL,
            REDIS_URL=settings.REDIS_URL,
            SECRET_KEY="s" * 50,
            JWT_SIGNING_KEY="j" * 50,
            REGISTRY_PORT=port,
        )

        result = run_manage("serve", env=env)

    assert result.returncode == 1
    assert_one_line(result.stderr, f"REGISTRY_PORT: port {port} on 127.0.0.1 is not available")


def test_production_settings_load_when_every_required_value_is_set(settings):
    env = clean_env(
        DJANGO_SETTINGS_MODULE="registry_site.settings.production",
        DATABASE_URL=settings.DATABASE_URL,
        REDIS_URL=settings.REDIS_URL,
        SECRET_KEY="s" * 50,
        JWT_SIGNING_KEY="j" * 50,
        ALLOWED_HOSTS="registry.example.test",
    )

    result = run_manage(
        "shell", "-c", "from django.conf import settings; print(settings.SESSION_COOKIE_SECURE)", env=env
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "True"


def test_a_missing_jwt_signing_key_outside_the_embedded_default_stops_start_up():
    env = clean_env(
        DATABASE_URL="postgresql://registry@127.0.0.1:1/registry",
        REDIS_URL="redis://127.0.0.1:1/0",
        SECRET_KEY="s" * 50,
    )

    result = run_manage("check", env=env)

    assert result.returncode == 2
    assert_one_line(result.stderr, "error: JWT_SIGNING_KEY is not set")
