"""REDIS_URL names one Redis server or the Sentinels of one (core/redis_url.py); the failover
itself runs in tests/multihost/test_failover.py."""

import pytest

from core.redis_url import RedisTarget, RedisUrlError, parse


def test_a_plain_url_is_one_server():
    assert parse("redis://:pw@10.0.0.5:6379/2") == RedisTarget(
        "redis://:pw@10.0.0.5:6379/2", (), "mymaster", None, 0, None
    )


def test_sentinel_urls_name_every_sentinel_and_the_first_carries_password_and_db():
    url = "sentinel://:s%40cret@10.0.0.1:26380/3;sentinel://10.0.0.2;sentinel://10.0.0.3:26379"

    target = parse(url, master_name="registry", sentinel_password="watch")

    assert target.sentinels == (("10.0.0.1", 26380), ("10.0.0.2", 26379), ("10.0.0.3", 26379))
    assert (target.master_name, target.password, target.db) == ("registry", "s@cret", 3)
    assert target.connection_kwargs() == {"password": "s@cret", "db": 3}
    assert target.sentinel_kwargs() == {"socket_timeout": 2, "socket_connect_timeout": 2, "password": "watch"}


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("redis://a;redis://b", "REDIS_URL: only sentinel:// URLs may be joined with ';'"),
        ("sentinel://10.0.0.1;redis://10.0.0.2", "REDIS_URL: 'redis://10.0.0.2' is not sentinel://host:port"),
        ("sentinel://10.0.0.1:99999", "REDIS_URL: 'sentinel://10.0.0.1:99999' has no valid port"),
        (
            "sentinel://10.0.0.1/zero",
            "REDIS_URL: the database of 'sentinel://10.0.0.1/zero' must be a number",
        ),
        (" ; ", "REDIS_URL is empty"),
    ],
)
def test_an_unusable_url_is_refused_with_what_to_change(url, message):
    with pytest.raises(RedisUrlError) as refused:
        parse(url)

    assert str(refused.value) == message


def test_a_sentinel_url_without_a_master_name_is_refused():
    with pytest.raises(RedisUrlError) as refused:
        parse("sentinel://10.0.0.1", master_name="")

    assert str(refused.value) == "REDIS_SENTINEL_MASTER is empty: name the master the Sentinels watch"
