"""DRF's browsable API and Swagger UI in Chromium, under the registry's Content-Security-Policy: every DRF
endpoint answers a browser with its HTML page (not 406), nothing on those pages breaks the policy, the
registry's login leads back to the endpoint, and a form posted from the page passes CSRF."""

import json

import pytest

from tests.browser.conftest import log_in
from tests.factories import ServerFactory

pytestmark = pytest.mark.django_db(transaction=True)

ENDPOINTS = ["/api/servers", "/api/agents", "/api/auth/me", "/api/tools/all"]


@pytest.fixture
def watched(page):
    """The page, and the Content-Security-Policy violations and script errors it reports."""
    problems = []
    page.on(
        "console",
        lambda message: (
            problems.append(message.text)
            if message.type == "error" and "Content Security Policy" in message.text
            else None
        ),
    )
    page.on("pageerror", lambda error: problems.append(str(error)))
    return page, problems


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_every_endpoint_is_browsable_without_breaking_the_policy(
    watched, site, operator_user, endpoint, screenshot
):
    page, problems = watched
    ServerFactory(path="/weather", name="Weather")
    log_in(page, "olga")

    response = page.goto(endpoint)

    assert response.status == 200
    assert response.headers["content-type"].startswith("text/html")
    assert page.locator(".navbar-brand").inner_text() == "MCP Gateway Registry"
    assert page.locator(".navbar-text").inner_text() == "olga"
    assert json.loads(page.locator(".response-info pre").inner_text().split("\n\n", 1)[1]) is not None
    assert (
        page.locator("meta[name=viewport]").get_attribute("content") == "width=device-width, initial-scale=1"
    )
    assert problems == []
    screenshot(page, f"browsable-api{endpoint.replace('/', '-')}")


def test_logging_in_from_the_browsable_api_comes_back_to_it(watched, site, operator_user):
    page, problems = watched

    assert page.goto("/api/servers").status == 401
    with page.expect_navigation():
        page.click("text=Log in")
    page.fill("#username", "olga")
    page.fill("#password", "correct horse battery staple")
    with page.expect_navigation():
        page.click("button[type=submit]")

    assert page.url == site.url("/api/servers")
    assert page.locator(".navbar-text").inner_text() == "olga"
    assert problems == []


def test_a_post_from_the_browsable_api_passes_csrf_with_the_session(watched, site, operator_user):
    page, problems = watched
    log_in(page, "olga")
    page.goto("/api/search/semantic")  # GET is not allowed: the page still offers the POST form

    page.fill("textarea[name=_content]", json.dumps({"query": "weather", "entity_types": ["mcp_server"]}))
    with page.expect_response(lambda response: response.request.method == "POST") as posted:
        page.click("form button:has-text('POST')")

    assert posted.value.status == 200
    page.wait_for_selector("text=HTTP 200 OK")
    assert '"results": []' in page.locator(".response-info pre").inner_text()
    assert problems == []


def test_the_registry_listing_is_browsable_by_anyone_when_public(watched, site, settings):
    page, problems = watched
    settings.PUBLIC_LISTING = True

    response = page.goto("/v0.1/servers")

    assert (response.status, response.headers["content-type"]) == (200, "text/html; charset=utf-8")
    assert page.locator(".navbar a", has_text="Log in").get_attribute("href") == "/login?next=/v0.1/servers"
    assert '"servers": [' in page.locator(".response-info pre").inner_text()
    assert problems == []


def test_swagger_ui_renders_under_the_policy(watched, site):
    page, problems = watched

    page.goto("/api/docs/")
    page.wait_for_selector(".swagger-ui .info .title")

    assert "MCP Gateway Registry API" in page.locator(".swagger-ui .info .title").inner_text()
    assert problems == []
