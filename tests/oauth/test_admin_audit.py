"""Applications registered, changed and removed in the operator console are audited; their secrets never
appear in the trail."""

import pytest
from oauth2_provider.models import Application

from accounts.models import AuditEvent

pytestmark = pytest.mark.django_db


def test_an_application_registered_changed_and_removed_in_the_console_is_audited(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("root", "root@example.test", "pw"))
    form = {
        "client_id": "console-app",
        "client_secret": "a-secret-nobody-should-read",
        "hash_client_secret": "on",
        "client_type": "confidential",
        "authorization_grant_type": "client-credentials",
        "name": "Reports",
        "redirect_uris": "",
        "post_logout_redirect_uris": "",
        "allowed_origins": "",
        "algorithm": "",
    }

    added = client.post("/admin/oauth2_provider/application/add/", form)
    application = Application.objects.get(client_id="console-app")
    changed = client.post(
        f"/admin/oauth2_provider/application/{application.pk}/change/",
        {
            **form,
            "name": "Monthly reports",
            "client_secret": application.client_secret,
            # what the change page's hidden inputs carry back, as a browser posts them
            "initial-client_id": "console-app",
            "initial-client_secret": application.client_secret,
        },
    )
    removed = client.post(f"/admin/oauth2_provider/application/{application.pk}/delete/", {"post": "yes"})

    assert (added.status_code, changed.status_code, removed.status_code) == (302, 302, 302)
    trail = [(e.actor_name, e.action, e.target, e.detail) for e in AuditEvent.objects.order_by("pk")]
    assert trail == [
        (
            "root",
            "oauth.client_create",
            "application:console-app",
            {
                "name": "Reports",
                "fields": ["authorization_grant_type", "client_id", "client_type", "name"],
                "client_secret_changed": True,
            },
        ),
        (
            "root",
            "oauth.client_update",
            "application:console-app",
            {"name": "Monthly reports", "fields": ["name"]},
        ),
        ("root", "oauth.client_delete", "application:console-app", {"name": "Monthly reports"}),
    ]
    assert "a-secret-nobody-should-read" not in str(trail)
