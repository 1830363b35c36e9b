"""The consent page of the authorization server in Chromium: what it says about the application, the
server, the rights (narrowable) and the time, with no Content-Security-Policy violation; and withdrawing
the access on My tokens."""

from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests
from oauth2_provider.models import Grant

from oauth.models import Consent
from tests.browser.conftest import log_in
from tests.factories import ServerFactory

pytestmark = pytest.mark.django_db(transaction=True)

REDIRECT = "http://127.0.0.1:33418/callback"


@pytest.fixture
def consenting_user(operator_user, scope_factory):
    scope_factory(
        "weather-tools",
        group="console-ops",
        server_rules=[{"server": "/weather", "methods": ["initialize", "tools/call"], "tools": ["forecast"]}],
    )
    scope_factory(
        "weather-list", group="console-ops", server_rules=[{"server": "/weather", "methods": ["tools/list"]}]
    )
    return operator_user


def test_the_consent_page_says_who_asks_for_what_and_narrows_rights(page, site, consenting_user, screenshot):
    ServerFactory(path="/weather", name="Weather")
    client_id = requests.post(
        site.url("/oauth/register"),
        json={
            "client_name": "Claude Code",
            "redirect_uris": [REDIRECT],
            "token_endpoint_auth_method": "none",
        },
    ).json()["client_id"]
    violations = []
    page.on("console", lambda message: violations.append(message.text) if message.type == "error" else None)
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "state": "xyz",
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        "code_challenge_method": "S256",
        "resource": site.url("/weather/mcp"),
        "scope": "mcp",
    }
    log_in(page, "olga", path="/oauth/authorize?" + urlencode(query))
    screenshot(page, "consent")

    assert page.locator("h1").inner_text() == "Authorize Claude Code"
    assert page.locator(".badge.warn").inner_text() == "self-registered"
    assert page.locator(".redirect-host").inner_text() == "127.0.0.1:33418"
    assert page.locator(".resource").inner_text() == "/weather"
    assert [text.strip() for text in page.locator(".rights label").all_inner_texts()] == [
        "weather-list\n/weather: tools/list",
        "weather-tools\n/weather: initialize, tools/call; tools: forecast",
    ]
    page.uncheck("input[name=rights][value='weather-list']")
    page.check("input[name=remember]")
    # The browser's request to the application's redirect URI is seen here, and answered by nothing.
    with page.expect_request(lambda request: request.url.startswith(REDIRECT)) as callback:
        page.click("#allow")

    answer = parse_qs(urlsplit(callback.value.url).query)
    assert (answer["state"], answer["iss"], len(answer["code"])) == (["xyz"], [site.url("")], 1)
    assert violations == []
    consent = Consent.objects.get()
    assert (consent.scopes, consent.remembered, consent.all_rights) == (["weather-tools"], True, False)

    page.goto("/api/tokens")
    screenshot(page, "authorized-applications")
    assert page.locator("table.applications td").first.inner_text() == "Claude Code remembered"
    page.click("table.applications button")
    page.locator("h1", has_text="Revoke the access of Claude Code?").wait_for()
    page.click("#confirm-revoke")
    page.wait_for_selector("text=You have authorized no application.")

    assert (Consent.objects.count(), Grant.objects.count()) == (0, 0)
