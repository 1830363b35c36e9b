"""The per-process principal and route caches: a token verified once is not looked up again, and every
change of what it may do, or of the server it names, is seen by the very next request."""

import pytest
import redis
from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import IssuedToken, Scope
from accounts.services import scope_update
from accounts.services.tokens import token_revoke
from core.epoch_watch import TRUST_SECONDS
from core.epochs import MISSING, EpochCache
from servers.models import Server
from servers.services.registry import server_toggle
from tests.gateway.test_validate import CALL_NOW, token, validate
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db


def checked(client, auth) -> tuple[int, int]:
    """(status, database queries) of one /validate call."""
    with CaptureQueriesContext(connection) as queries:
        status = validate(client, auth=auth, body=CALL_NOW).status_code
    return status, len(queries)


def test_a_verified_token_and_its_server_are_not_looked_up_again(client, timer):
    raw = token(timer)

    first = checked(client, raw)
    second = checked(client, raw)

    assert first[0] == second[0] == 200
    assert first[1] > 0
    assert second[1] == 0


def _revoke(user):
    token_revoke(actor=None, token=IssuedToken.objects.get(user=user))


def _deactivate(user):
    user.is_active = False
    user.save()


def _leave_group(user):
    user.groups.remove(Group.objects.get(name="timers"))


def _narrow_scope(user):
    scope = Scope.objects.get(name="time-exec")
    scope_update(actor=None, scope=scope, server_rules=[{**scope.server_rules[0], "tools": ["other"]}])


def _ungrant_scope(user):
    Scope.objects.get(name="time-exec").groups.clear()


def _delete_group(user):
    Group.objects.get(name="timers").delete()


def _disable_server(user):
    server_toggle(actor=None, server=Server.objects.get(path="/currenttime"), enabled=False)


@pytest.mark.parametrize(
    "change, status",
    [
        (_revoke, 401),
        (_deactivate, 401),
        (_leave_group, 403),
        (_narrow_scope, 403),
        (_ungrant_scope, 403),
        (_delete_group, 403),
        (_disable_server, 403),
    ],
)
def test_the_next_request_sees_every_change(client, timer, change, status):
    raw = token(timer)
    assert checked(client, raw)[0] == checked(client, raw)[0] == 200  # cached

    change(timer)

    assert checked(client, raw)[0] == status


def test_a_bump_in_one_process_drops_the_entries_of_every_other():
    here, elsewhere = EpochCache("test-shared"), EpochCache("test-shared")  # two processes' caches
    here.put("token", "principal", here.epoch())

    kept = here.get("token", here.epoch())
    elsewhere.bump()

    assert kept == "principal"
    assert here.get("token", here.epoch()) is MISSING


def test_an_expired_entry_is_not_served():
    cache = EpochCache("test-expiry")
    epoch = cache.epoch()
    cache.put("token", "principal", epoch, expires_at=1.0)  # expired in 1970

    assert cache.get("token", epoch) is MISSING


def test_without_an_epoch_nothing_is_cached():
    cache = EpochCache("test-no-redis")  # epoch None: Redis did not answer

    cache.put("token", "principal", None)

    assert cache.get("token", None) is MISSING
    assert cache.get("token", b"0") is MISSING


def test_a_redis_that_lost_its_epochs_starts_new_ones_no_entry_matches(settings):
    cache = EpochCache("test-lost")
    first = cache.epoch()
    cache.put("token", "principal", first)

    redis.Redis.from_url(settings.REDIS_URL).delete(cache.key)  # a restart without its data

    # pushed epochs are current within TRUST_SECONDS (core/epoch_watch.py): a new one by then at the latest
    wait_for(lambda: cache.epoch() != first, timeout=TRUST_SECONDS + 0.25, interval=0.02, what="a new epoch")
    assert cache.get("token", cache.epoch()) is MISSING
