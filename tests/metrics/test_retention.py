"""Retention: per-table policies in the database, applied by the admin endpoints and the daily task."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from metrics.models import AuthMetric, GenericMetric, RetentionPolicy
from metrics.services import api_key_create, retention_policy_set
from metrics.tasks import retention_cleanup_task

pytestmark = pytest.mark.django_db


def stored(model, days_old: float, **fields):
    extra = {"success": True, "method": "jwt"} if model is AuthMetric else {"type": "custom"}
    return model.objects.create(
        id=uuid.uuid4(),
        service="registry",
        timestamp=timezone.now() - timedelta(days=days_old),
        value=1,
        **extra,
        **fields,
    )


@pytest.fixture
def rows(db):
    """Auth rows 10 and 100 days old, generic rows 10 and 100 days old."""
    return [
        stored(AuthMetric, 10),
        stored(AuthMetric, 100),
        stored(GenericMetric, 10),
        stored(GenericMetric, 100),
    ]


@pytest.fixture
def admin_key(key_factory):
    return key_factory("ops", is_admin=True)


def test_policies_list_every_table_with_its_days(client, metrics_urls, admin_key, settings):
    settings.METRICS_RETENTION_DAYS = 90
    retention_policy_set(actor=None, table="auth_metrics", days=30)

    response = client.get("/admin/retention/policies", HTTP_X_API_KEY=admin_key)

    assert response.status_code == 200
    assert response.json() == {
        "default_days": 90,
        "policies": [
            {"table": "auth_metrics", "retention_days": 30, "source": "policy"},
            {"table": "tool_execution_metrics", "retention_days": 90, "source": "default"},
            {"table": "discovery_metrics", "retention_days": 90, "source": "default"},
            {"table": "protocol_latency_metrics", "retention_days": 90, "source": "default"},
            {"table": "generic_metrics", "retention_days": 90, "source": "default"},
        ],
    }


def test_a_dry_run_counts_and_deletes_nothing(client, metrics_urls, admin_key, rows):
    response = client.post(
        "/admin/retention/cleanup",
        {"dry_run": True},
        content_type="application/json",
        HTTP_X_API_KEY=admin_key,
    )

    assert response.status_code == 200
    assert response.json()["deleted"] == {
        "auth_metrics": 1,
        "tool_execution_metrics": 0,
        "discovery_metrics": 0,
        "protocol_latency_metrics": 0,
        "generic_metrics": 1,
    }
    assert (response.json()["dry_run"], response.json()["total"]) == (True, 2)
    assert AuthMetric.objects.count() + GenericMetric.objects.count() == 4


def test_cleanup_applies_each_tables_policy(client, metrics_urls, admin_key, rows):
    retention_policy_set(actor=None, table="generic_metrics", days=5)

    response = client.post(
        "/admin/retention/cleanup",
        {"tables": ["auth_metrics", "generic_metrics"]},
        content_type="application/json",
        HTTP_X_API_KEY=admin_key,
    )

    assert response.json() == {
        "dry_run": False,
        "deleted": {"auth_metrics": 1, "generic_metrics": 2},
        "total": 3,
    }
    assert list(AuthMetric.objects.values_list("pk", flat=True)) == [rows[0].pk]
    assert GenericMetric.objects.count() == 0


def test_table_names_come_only_from_the_known_list(client, metrics_urls, admin_key, rows):
    response = client.post(
        "/admin/retention/cleanup",
        {"tables": ["auth_metrics; DROP TABLE metrics_authmetric"]},
        content_type="application/json",
        HTTP_X_API_KEY=admin_key,
    )

    assert response.status_code == 400
    assert response.json()["detail"].startswith(
        "Unknown tables ['auth_metrics; DROP TABLE metrics_authmetric']"
    )
    assert AuthMetric.objects.count() == 2


@pytest.mark.parametrize("body", [{"dry_run": "yes"}, {"tables": "auth_metrics"}, ["x"]])
def test_malformed_cleanup_requests_are_400(client, metrics_urls, admin_key, body):
    response = client.post(
        "/admin/retention/cleanup", body, content_type="application/json", HTTP_X_API_KEY=admin_key
    )

    assert response.status_code == 400


def test_ordinary_keys_may_not_use_the_admin_endpoints(client, metrics_urls, key_factory):
    key = key_factory()

    policies = client.get("/admin/retention/policies", HTTP_X_API_KEY=key)
    cleanup = client.post("/admin/retention/cleanup", {}, content_type="application/json", HTTP_X_API_KEY=key)

    assert (policies.status_code, cleanup.status_code) == (403, 403)
    assert policies.json()["detail"] == "This endpoint needs a key marked admin."
    assert client.get("/admin/retention/policies").status_code == 401


def test_the_daily_task_applies_the_default(rows, settings):
    settings.METRICS_RETENTION_DAYS = 50

    deleted = retention_cleanup_task.apply().get()

    assert deleted["auth_metrics"] == 1 and deleted["generic_metrics"] == 1
    assert RetentionPolicy.objects.count() == 0


@pytest.mark.parametrize("body", ["[]", "0", "null", '"x"', "[{}]"])
def test_a_cleanup_body_that_is_not_an_object_is_400_and_deletes_nothing(client, metrics_urls, body):
    key = api_key_create(actor=None, service="ops", is_admin=True)[1]
    old = AuthMetric.objects.create(
        id=uuid.uuid4(),
        service="s",
        timestamp=timezone.now() - timedelta(days=400),
        value=1,
        success=True,
        method="jwt",
    )

    response = client.post(
        "/admin/retention/cleanup", body, content_type="application/json", HTTP_X_API_KEY=key
    )

    assert response.status_code == 400
    assert response.json()["detail"] == "The body must be a JSON object."
    assert AuthMetric.objects.filter(pk=old.pk).exists()
