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
from tests.mcp_servers import UvicornThread, loopback_socket

pytestmark = pytest.mark.django_db(transaction=True)


async def _callback_page(scope, receive, send):
    if scope["type"] == "http":
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]}
        )
        await send({"type": "http.response.body", "body": b"You may close this window."})


@pytest.fixture
def redirect_uri():
    """The application's redirect URI: a loopback listener of its own, as a desktop host's."""
    running = UvicornThread(_callback_page, loopback_socket()).start()
    yield running.url("/callback")
    running.stop()


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


def test_the_consent_page_says_who_asks_for_what_and_narrows_rights(
    page, site, consenting_user, redirect_uri, screenshot
):
    ServerFactory(path="/weather", name="Weather")
    client_id = requests.post(
        site.url("/oauth/register"),
        json={
            "client_name": "Claude Code",
            "redirect_uris": [redirect_uri],
            "token_endpoint_auth_method": "none",
        },
    ).json()["client_id"]
    violations = []
    page.on("console", lambda message: violations.append(message.text) if message.type == "error" else None)
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
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
    assert page.locator(".redirect-host").inner_text() == urlsplit(redirect_uri).netloc
    assert page.locator(".resource").inner_text() == "/weather"
    assert [text.strip() for text in page.locator(".rights label").all_inner_texts()] == [
        "weather-list\n/weather: tools/list",
        "weather-tools\n/weather: initialize, tools/call; tools: forecast",
    ]
    page.uncheck("input[name=rights][value='weather-list']")
    page.check("input[name=remember]")
    with page.expect_request(lambda request: request.url.startswith(redirect_uri)) as callback:
        page.click("#allow")

    page.wait_for_url(redirect_uri + "?**")
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


def test_the_preview_follows_the_ticks_and_allow_with_nothing_ticked_asks_again(
    sized, site, operator_user, scope_factory, redirect_uri, screenshot
):
    from tests.browser.conftest import overflow
    from tests.factories import ToolFactory

    page, width = sized
    weather = ServerFactory(path="/weather", name="Weather")
    for name in ("alerts", "forecast"):
        ToolFactory(server=weather, name=name)
    scope_factory(
        "weather-calls",
        group="console-ops",
        server_rules=[{"server": "/weather", "methods": ["initialize", "tools/call"], "tools": ["*"]}],
    )
    client_id = requests.post(
        site.url("/oauth/register"),
        json={"client_name": "Host", "redirect_uris": [redirect_uri], "token_endpoint_auth_method": "none"},
    ).json()["client_id"]
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "state": "s1",
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        "code_challenge_method": "S256",
        "resource": site.url("/weather/mcp"),
    }
    log_in(page, "olga", path="/oauth/authorize?" + urlencode(query))
    preview = page.locator("[data-preview]")
    both = preview.inner_text()
    page.uncheck("input[name=tools][value=alerts]")
    one = preview.inner_text()
    page.uncheck("input[name=tools][value=forecast]")
    none = preview.inner_text()
    with page.expect_navigation():
        page.click("#allow")
    problem = page.locator("[data-problem]").inner_text()
    still_unticked = page.locator("input[name=tools]:checked").count()
    screenshot(page, f"consent-nothing-ticked-{width}")
    fits = overflow(page)
    page.check("input[name=tools][value=forecast]")
    with page.expect_request(lambda request: request.url.startswith(redirect_uri)) as callback:
        page.click("#allow")

    said = "With the choices as shown, it "
    assert both == said + "can call alerts, forecast on /weather and cannot administer."
    assert one == said + "can call forecast on /weather and cannot administer."
    assert none == said + "can call no tool yet: tick at least one, or choose Deny."
    assert problem == "Tick at least one tool it may call, or choose Deny."
    assert still_unticked == 0
    assert fits == 0
    assert "code" in parse_qs(urlsplit(callback.value.url).query)
    assert Consent.objects.get().tools == {"/weather": ["forecast"]}
