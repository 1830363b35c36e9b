"""The Celery broker's redelivery of tasks whose worker died, with the project's transport options on the
real Redis."""

import time

import redis
from django.conf import settings
from kombu import Connection


def test_a_restore_lock_left_by_a_killed_worker_lapses_within_five_sweeps():
    options = settings.CELERY_BROKER_TRANSPORT_OPTIONS
    with Connection(settings.CELERY_BROKER_URL, transport_options=options) as connection:
        channel = connection.default_channel
        client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
        # A worker killed in the middle of a sweep: it took the lock the way kombu does, never released it.
        client.lock(channel.unacked_mutex_key, timeout=channel.unacked_mutex_expire).acquire(blocking=False)
        ttl = client.pttl(channel.unacked_mutex_key) / 1000

    interval = options["unacked_restore_interval"]
    assert 0 < ttl <= 5 * interval
    assert 5 * interval < settings.CELERY_VISIBILITY_TIMEOUT_SECONDS


def test_a_due_task_is_restored_by_the_sweep_once_the_lock_lapses():
    options = settings.CELERY_BROKER_TRANSPORT_OPTIONS | {"unacked_mutex_expire": 1}
    with Connection(settings.CELERY_BROKER_URL, transport_options=options) as connection:
        channel = connection.default_channel
        queue = connection.SimpleQueue("restore-probe")
        queue.put({"n": 1})
        message = queue.get(timeout=5)  # delivered, never acknowledged: its worker died
        client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
        visibility = channel.visibility_timeout
        client.zadd(channel.unacked_index_key, {message.delivery_tag: time.time() - visibility - 1})
        client.lock(channel.unacked_mutex_key, timeout=1).acquire(blocking=False)

        channel.qos.restore_visible(num=10, interval=1)
        held = client.llen("restore-probe")
        time.sleep(1.2)
        channel.qos.restore_visible(num=10, interval=1)
        restored = client.llen("restore-probe")
        queue.close()

    assert (held, restored) == (0, 1)
