import stat

import pytest
from django.db import connection

from runtime import embedded


@pytest.mark.django_db
def test_the_database_has_the_vector_extension():
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()

    assert row is not None
    assert row[0].split(".")[0] == "0"


@pytest.mark.django_db
def test_the_database_is_postgresql_16():
    assert connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version_num")
        assert int(cursor.fetchone()[0]) // 10000 == 16


def test_a_secret_is_generated_once_private_and_then_reused(tmp_path):
    path = tmp_path / "var" / "secret_key"

    first = embedded.read_or_create_secret(path)
    second = embedded.read_or_create_secret(path)

    assert first == second
    assert len(first) >= 50
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_settings_use_the_embedded_secret_key(settings):
    assert settings.EMBEDDED_DATABASE is True
    assert settings.SECRET_KEY == (settings.VAR_DIR / "secret_key").read_text().strip()


def test_redis_is_the_same_server_for_cache_celery_and_channels(settings):
    import redis

    assert settings.CACHES["default"]["LOCATION"] == settings.REDIS_URL
    assert settings.CELERY_BROKER_URL == settings.REDIS_URL
    assert settings.CHANNEL_LAYERS["default"]["CONFIG"]["hosts"][0]["address"] == settings.REDIS_URL
    assert redis.Redis.from_url(settings.REDIS_URL).ping() is True
