"""Deleting a user in the console takes everything that acts or holds secrets for them: the tokens they
made (refused at once), applications' consents and tokens, client credentials and their connections to
upstream servers; the confirmation page asks no right over those rows of whoever may delete the user, and
one audit row counts what went."""

import pytest
from oauth2_provider.models import Application

from accounts.models import AuditEvent, User
from connections.models import UpstreamCredential
from oauth.models import Consent
from tests.factories import ServerFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def dana(member, token_for):
    """A user who made a token, consented to an application and connected a server."""
    user = member("dana", "nobody")
    token = token_for(user)
    application = Application.objects.create(
        name="Host", client_type="public", authorization_grant_type="authorization-code", redirect_uris=""
    )
    Consent.objects.create(user=user, application=application, scopes=["servers:read"])
    UpstreamCredential.objects.create(
        server=ServerFactory(path="/keyed"), user=user, mode="user_secret", origin="http://x", sealed="-"
    )
    return user, token


def test_an_administrator_deletes_a_user_who_made_a_token_and_everything_of_theirs_goes(admin_client, dana):
    user, token = dana
    page = admin_client.get(f"/admin/accounts/user/{user.pk}/delete/").content.decode()

    deleted = admin_client.post(f"/admin/accounts/user/{user.pk}/delete/", {"post": "yes"})
    refused = admin_client.get("/api/servers", headers={"Authorization": f"Bearer {token}"})

    assert "no permission to delete" not in page.lower()
    assert "Are you sure" in page
    assert deleted.status_code == 302
    assert not User.objects.filter(username="dana").exists()
    assert not Consent.objects.exists() and not UpstreamCredential.objects.exists()
    assert refused.status_code == 401
    row = AuditEvent.objects.get(action="user.delete", target="user:dana")
    assert row.detail == {"tokens": 1, "consents": 1, "connections": 1}
