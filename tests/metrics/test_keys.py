"""Metrics API keys: hashed only, from the environment, from the command, revoked in the admin, cached per
process until any key changes."""

import hashlib

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from accounts.models import AuditEvent
from core.epochs import MISSING, EpochCache
from metrics.cache import API_KEYS
from metrics.models import ApiKey, key_hash
from metrics.selectors import api_key_for
from metrics.services import api_key_create, api_key_revoke, api_keys_from_environment

pytestmark = pytest.mark.django_db


def test_only_the_sha256_of_a_key_is_stored():
    key, raw = api_key_create(actor=None, service="Auth-Server")

    assert key.service == "auth-server"
    assert raw.startswith("mk_") and len(raw) > 40
    assert key.key_hash == hashlib.sha256(raw.encode()).hexdigest()
    assert raw not in str(list(ApiKey.objects.values()))
    assert api_key_for(raw) == key
    assert api_key_for(raw + "x") is None


def test_every_metrics_api_key_variable_makes_the_key_of_its_service_once():
    environ = {
        "METRICS_API_KEY_REGISTRY": "secret-one",
        "METRICS_API_KEY_AUTH_SERVER": "secret-two",
        "OTHER": "x",
    }

    first = api_keys_from_environment(environ)
    again = api_keys_from_environment(environ)

    assert first == again == ["auth_server", "registry"]
    assert api_key_for("secret-one").service == "registry"
    assert api_key_for("secret-two").from_environment is True
    assert AuditEvent.objects.filter(action="metrics_key.create").count() == 2  # the restart wrote nothing


def test_a_changed_variable_replaces_the_key_and_a_revoked_one_stays_revoked():
    api_keys_from_environment({"METRICS_API_KEY_REGISTRY": "old"})
    key = ApiKey.objects.get(service="registry")
    key.rate_limit = 50
    key.save()

    api_key_revoke(actor=None, key=key)
    api_keys_from_environment({"METRICS_API_KEY_REGISTRY": "old"})
    assert api_key_for("old") is None  # revoked in the admin: a restart does not bring it back

    api_keys_from_environment({"METRICS_API_KEY_REGISTRY": "new"})

    assert api_key_for("new").rate_limit == 50
    assert api_key_for("old") is None


def test_the_command_prints_a_new_key_once(capsys):
    call_command("create_metrics_key", "tools", "--rate-limit", "120", "--admin")

    out, err = capsys.readouterr()
    raw = out.strip()
    key = api_key_for(raw)
    assert (key.service, key.rate_limit, key.is_admin) == ("tools", 120, True)
    assert "shown only now" in err
    assert raw not in err


def test_the_command_refuses_a_bad_rate_limit():
    with pytest.raises(CommandError, match="--rate-limit must be at least 1"):
        call_command("create_metrics_key", "tools", "--rate-limit", "0")


def test_keys_are_listed_and_revoked_in_the_admin(admin_client):
    key, raw = api_key_create(actor=None, service="registry")

    listing = admin_client.get("/admin/metrics/apikey/")
    revoke = admin_client.post(
        "/admin/metrics/apikey/", {"action": "revoke_selected", "_selected_action": [key.pk]}, follow=True
    )

    assert listing.status_code == 200
    assert key.prefix in listing.content.decode() and raw not in listing.content.decode()
    assert revoke.status_code == 200
    assert api_key_for(raw) is None
    assert AuditEvent.objects.filter(action="metrics_key.revoke", target="metrics_key:registry").count() == 1
    assert admin_client.get("/admin/metrics/apikey/add/").status_code == 403


def test_metric_rows_are_read_only_in_the_admin(admin_client):
    assert admin_client.get("/admin/metrics/authmetric/").status_code == 200
    assert admin_client.get("/admin/metrics/authmetric/add/").status_code == 403


def test_a_known_key_is_looked_up_once_then_served_from_the_cache(django_assert_num_queries):
    key, raw = api_key_create(actor=None, service="registry")

    with django_assert_num_queries(1):
        first = api_key_for(raw)
    with django_assert_num_queries(0):
        again = api_key_for(raw)

    assert first == again == key


def test_a_revoked_key_is_refused_at_once_though_another_process_cached_it():
    key, raw = api_key_create(actor=None, service="registry")
    assert api_key_for(raw) == key  # cached under the current epoch
    elsewhere = EpochCache(API_KEYS.key.removeprefix("registry:epoch:"))  # another process's cache
    elsewhere.put(key_hash(raw), key, elsewhere.epoch())

    api_key_revoke(actor=None, key=key)

    assert api_key_for(raw) is None
    assert elsewhere.get(key_hash(raw), elsewhere.epoch()) is MISSING


def test_unknown_keys_are_not_kept():
    api_key_create(actor=None, service="registry")
    API_KEYS.clear()

    assert api_key_for("mk_guessed") is None
    assert len(API_KEYS._entries) == 0
