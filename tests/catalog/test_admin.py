"""The catalog in the operator console: upstreams through the services, their credential write-only,
versions read-only, and detaching a mirrored server."""

import pytest
from django.urls import reverse
from django.utils import timezone

from accounts.models import AuditEvent
from catalog.models import ServerVersion, Upstream
from tests.factories import stored_version

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


def test_removing_an_upstream_removes_its_mirrored_versions_from_the_page_and_the_bulk_action(admin_client):
    one = Upstream.objects.create(name="one", url="https://one.example.test")
    two = Upstream.objects.create(name="two", url="https://two.example.test")
    stored_version("com.acme/maps", upstream=one)
    stored_version("com.acme/roads", upstream=two)

    page = admin_client.get(reverse("admin:catalog_upstream_delete", args=[one.pk])).content.decode()
    deleted = admin_client.post(reverse("admin:catalog_upstream_delete", args=[one.pk]), {"post": "yes"})
    bulk = admin_client.post(
        reverse("admin:catalog_upstream_changelist"),
        {"action": "delete_selected", "_selected_action": [two.pk], "post": "yes"},
    )

    assert "permission to delete" not in page and "com.acme/maps" in page
    assert (deleted.status_code, bulk.status_code) == (302, 302)
    assert (Upstream.objects.count(), ServerVersion.objects.count()) == (0, 0)


def test_versions_are_deprecated_made_active_and_marked_deleted_from_the_console(admin_client):
    maps = stored_version("com.acme/maps")
    mirrored = stored_version(
        "com.acme/roads", upstream=Upstream.objects.create(name="o", url="https://o.test")
    )
    changelist = reverse("admin:catalog_serverversion_changelist")

    def act(action, *rows):
        return admin_client.post(
            changelist, {"action": action, "_selected_action": [r.pk for r in rows]}, follow=True
        )

    deprecated = act("deprecate", maps, mirrored)
    maps.refresh_from_db()
    after_deprecate = maps.status
    act("undeprecate", maps)
    maps.refresh_from_db()
    after_undeprecate = maps.status
    act("mark_deleted", maps)
    maps.refresh_from_db()
    page = admin_client.get(reverse("admin:catalog_serverversion_change", args=[maps.pk])).content.decode()

    assert (after_deprecate, after_undeprecate, maps.status) == ("deprecated", "active", "deleted")
    assert "1 versions deprecated." in deprecated.content.decode()
    assert "is mirrored from the upstream o, whose status it follows." in deprecated.content.decode()
    assert '<pre class="tool-schema">{\n  &quot;name&quot;: &quot;com.acme/maps&quot;' in page
    assert AuditEvent.objects.filter(action="version.status").count() == 3
