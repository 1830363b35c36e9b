"""Authorization codes (OAuth 2.1, RFC 7636): a code presented again is refused and the tokens of its
first exchange are revoked, refresh family included; a code challenge must be an S256 challenge
(43 base64url characters), wherever the code would be created."""

from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from oauth2_provider.models import AccessToken, Grant, RefreshToken

from accounts.models import AuditEvent
from tests.gateway.gateway_calls import INITIALIZE, post
from tests.oauth.conftest import inputs_of

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_replayed_code_revokes_the_tokens_of_its_first_exchange(host, servers, gateway):
    resource = host.base + "/alpha/mcp"
    client_id = host.register().json()["client_id"]
    location = host.consent(host.authorize(client_id, resource))
    code = parse_qs(urlsplit(location).query)["code"][0]
    first = host.exchange(client_id, code, resource).json()
    bearer = {"Authorization": f"Bearer {first['access_token']}"}
    before, _, _ = post(gateway.port, "/alpha/mcp", INITIALIZE, bearer)

    replayed = host.exchange(client_id, code, resource)
    after, _, _ = post(gateway.port, "/alpha/mcp", INITIALIZE, bearer)
    refreshed = requests.post(
        f"{host.base}/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": first["refresh_token"], "client_id": client_id},
    )

    assert before == 200
    assert (replayed.status_code, replayed.json()["error"]) == (400, "invalid_grant")
    assert after == 401
    assert refreshed.status_code == 400
    assert AccessToken.objects.filter(user__isnull=False).count() == 0  # (the registration token stays)
    assert RefreshToken.objects.count() == 0
    assert AuditEvent.objects.filter(action="oauth.code_replay").count() == 1


@pytest.mark.parametrize(
    "challenge",
    ["abc", "a" * 42, "a" * 44, "a" * 42 + "=", "a" * 42 + "+", "a" * 128],
    ids=["3", "42", "44", "padding", "plus", "128"],
)
def test_a_code_challenge_that_s256_cannot_make_is_refused(host, servers, challenge):
    client_id = host.register().json()["client_id"]

    page = host.authorize(client_id, host.base + "/alpha/mcp", code_challenge=challenge)

    assert page.status_code == 302
    assert parse_qs(urlsplit(page.headers["Location"]).query)["error"] == ["invalid_request"]
    assert Grant.objects.count() == 0


def test_an_altered_challenge_on_the_consent_form_creates_no_code(host, servers):
    client_id = host.register().json()["client_id"]
    page = host.authorize(client_id, host.base + "/alpha/mcp")
    form = {name: value for name, value in inputs_of(page.text) if name not in ("rights", "remember")}
    form.update(code_challenge="abc", allow="on", rights="__all__")

    answer = host.browser.post(
        f"{host.base}/oauth/authorize", data=form, headers={"Referer": page.url}, allow_redirects=False
    )

    assert "code=" not in answer.headers.get("Location", "")
    assert Grant.objects.count() == 0
