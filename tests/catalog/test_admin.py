"""The catalog in the operator console: upstreams through the services, their credential write-only,
versions read-only, and detaching a mirrored server."""

import pytest
from django.urls import reverse
from django.utils import timezone

from accounts.models import AuditEvent
from catalog.models import ServerVersion, Upstream

pytestmark = pytest.mark.django_db

FORM = {
    "name": "official",
    "url": "https://registry.example.test",
    "auth_header": "Bearer s3cret-value",
    "include": "io.github.*, com.acme/*",
    "exclude": "",
    "interval_minutes": "30",
    "is_enabled": "on",
}


@pytest.mark.parametrize(
    "url_name",
    [
        "admin:catalog_upstream_changelist",
        "admin:catalog_upstream_add",
        "admin:catalog_serverversion_changelist",
    ],
)
def test_the_catalog_pages_render(admin_client, url_name):
    assert admin_client.get(reverse(url_name)).status_code == 200


def test_adding_an_upstream_goes_through_the_service_and_never_shows_its_credential(admin_client):
    added = admin_client.post(reverse("admin:catalog_upstream_add"), FORM)
    upstream = Upstream.objects.get(name="official")
    page = admin_client.get(reverse("admin:catalog_upstream_change", args=[upstream.pk]))
    kept = admin_client.post(
        reverse("admin:catalog_upstream_change", args=[upstream.pk]), FORM | {"auth_header": ""}
    )

    assert (added.status_code, kept.status_code) == (302, 302)
    assert (upstream.include, upstream.interval_minutes) == (["io.github.*", "com.acme/*"], 30)
    assert "s3cret-value" not in page.content.decode()
    upstream.refresh_from_db()
    assert upstream.auth_header == "Bearer s3cret-value"  # an empty box keeps it
    event = AuditEvent.objects.get(action="upstream.create")
    assert event.detail["auth_header"] == "(set)"


def test_detaching_a_mirrored_server_makes_it_publishable_here(admin_client):
    upstream = Upstream.objects.create(name="official", url="https://registry.example.test")
    now = timezone.now()
    version = ServerVersion.objects.create(
        name="com.acme/maps",
        version="1.0.0",
        document={"name": "com.acme/maps", "description": "Maps", "version": "1.0.0"},
        status_changed_at=now,
        published_at=now,
        updated_at=now,
        is_latest=True,
        upstream=upstream,
    )

    admin_client.post(
        reverse("admin:catalog_serverversion_changelist"),
        {"action": "detach", "_selected_action": [version.pk]},
    )

    version.refresh_from_db()
    assert version.upstream is None
    assert AuditEvent.objects.get(action="versions.detach").detail == {"from": ["official"]}
