"""Limits and quarantines managed through the API, the internal API and the console, by the one rule
(limits/rules.py) and audited; only administrators manage them."""

import base64
import json

import pytest

from accounts.models import AuditEvent
from limits.models import Limit, Quarantine
from tests.factories import ServerFactory

pytestmark = pytest.mark.django_db

PAYMENTS = {
    "caller_kind": "user",
    "caller": "bot",
    "target_kind": "server",
    "target": "payments",
    "windows": [{"per": "minute", "limit": 60}],
}


@pytest.fixture
def world(member):
    ServerFactory(path="/payments")
    return member("bot", "bots")


def api(client, token, method, path, body=None):
    data = json.dumps(body) if body is not None else None
    return getattr(client, method)(
        path, data=data, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )


def test_an_administrator_sets_reads_replaces_and_removes_a_limit(client, world, admin_user, token_for):
    token = token_for(admin_user)

    created = api(client, token, "post", "/api/limits", PAYMENTS)
    limit_id = created.json()["id"]
    replaced = api(
        client,
        token,
        "put",
        f"/api/limits/{limit_id}",
        {**PAYMENTS, "windows": [{"per": "hour", "limit": 600}]},
    )
    listed = api(client, token, "get", "/api/limits")
    removed = api(client, token, "delete", f"/api/limits/{limit_id}")
    gone = api(client, token, "get", f"/api/limits/{limit_id}")

    assert created.status_code == 201
    assert created.json() == {
        "id": limit_id,
        **PAYMENTS,
        "target": "/payments",
        "counts": ["tools", "prompts", "resources", "a2a"],
        "fail_open": False,
        "note": "",
    }
    assert replaced.json()["windows"] == [{"per": "hour", "limit": 600}]
    assert [entry["id"] for entry in listed.json()["limits"]] == [limit_id]
    assert (removed.status_code, gone.status_code) == (204, 404)
    assert list(
        AuditEvent.objects.filter(action__startswith="limit").order_by("pk").values_list("action", flat=True)
    ) == [
        "limit.set",
        "limit.set",
        "limit.remove",
    ]


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        ({**PAYMENTS, "windows": []}, ["windows"]),
        ({**PAYMENTS, "windows": [{"per": {}, "limit": 1}]}, ["windows"]),
        ({**PAYMENTS, "windows": [{"per": ["minute"], "limit": 1}]}, ["windows"]),
        ({**PAYMENTS, "caller": "nobody", "target": "/nowhere"}, ["caller", "target"]),
        ({**PAYMENTS, "counts": ["tools", "pings"]}, ["counts"]),
        ({**PAYMENTS, "fail_open": "yes"}, ["fail_open"]),
        ({**PAYMENTS, "caller": ["bot"]}, ["caller"]),
        ({"windows": [{"per": "minute", "limit": 1}]}, ["caller_kind"]),
        ([PAYMENTS], ["body"]),
    ],
)
def test_a_bad_limit_is_refused_by_field_and_nothing_is_stored(
    client, world, admin_user, token_for, body, errors
):
    answer = api(client, token_for(admin_user), "post", "/api/limits", body)

    assert answer.status_code == 400
    assert sorted(answer.json()["errors"]) == errors
    assert not Limit.objects.exists()


def test_only_administrators_manage_limits_and_quarantines(client, world, token_for):
    token = token_for(world)

    answers = [
        api(client, token, "get", "/api/limits").status_code,
        api(client, token, "post", "/api/limits", PAYMENTS).status_code,
        api(
            client, token, "post", "/api/quarantines", {"kind": "user", "name": "bot", "reason": "x"}
        ).status_code,
    ]

    assert answers == [403, 403, 403]
    assert not Limit.objects.exists() and not Quarantine.objects.exists()


def test_the_internal_api_quarantines_and_lifts_but_never_the_administrator_themselves(
    client, world, settings, admin_user, token_for
):
    settings.ADMIN_USER, settings.ADMIN_PASSWORD = "ops", "an internal secret"
    ops = {"HTTP_AUTHORIZATION": "Basic " + base64.b64encode(b"ops:an internal secret").decode()}

    def call(method, path, body=None):
        data = json.dumps(body) if body is not None else None
        return getattr(client, method)(path, data=data, content_type="application/json", **ops)

    set_ = call(
        "post", "/api/internal/quarantines", {"kind": "server", "name": "payments", "reason": "leaking"}
    )
    listed = call("get", "/api/internal/quarantines")
    lifted = call("delete", f"/api/internal/quarantines/{set_.json()['id']}")
    self_ = api(
        client,
        token_for(admin_user),
        "post",
        "/api/quarantines",
        {"kind": "user", "name": admin_user.username, "reason": "oops"},
    )

    assert (set_.status_code, set_.json()["name"], set_.json()["reason"]) == (201, "/payments", "leaking")
    assert [entry["name"] for entry in listed.json()["quarantines"]] == ["/payments"]
    assert lifted.status_code == 204
    assert (self_.status_code, self_.json()["errors"]) == (
        400,
        {"name": ["You cannot quarantine yourself: another administrator may."]},
    )
    assert not Quarantine.objects.exists()


def test_the_console_sets_a_limit_by_the_same_rule(client, world, admin_user):
    client.force_login(admin_user)
    form = {
        "caller_kind": "user",
        "caller": "bot",
        "target_kind": "server",
        "target": "/payments",
        "per_minute": "60",
        "per_day": "5000",
        "counts": ["tools"],
        "note": "",
    }

    refused = client.post("/admin/limits/limit/add/", {**form, "per_minute": "", "per_day": ""})
    saved = client.post("/admin/limits/limit/add/", form)
    limit = Limit.objects.get()
    editing = client.get(f"/admin/limits/limit/{limit.pk}/change/").content.decode()

    assert refused.status_code == 200
    assert (
        "Give at least one window: how many calls a second, minute, hour or day." in refused.content.decode()
    )
    assert saved.status_code == 302
    assert (limit.caller, limit.target, limit.counts) == ("bot", "/payments", ["tools"])
    assert limit.windows == [{"per": "minute", "limit": 60}, {"per": "day", "limit": 5000}]
    assert 'name="per_minute" value="60"' in editing and 'name="per_day" value="5000"' in editing
    assert 'type="checkbox" name="counts" value="tools"' in editing
    assert AuditEvent.objects.get().action == "limit.set"
