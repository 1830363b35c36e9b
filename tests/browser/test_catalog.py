"""The catalog page in Chromium: search, entries opened to their install commands, no console errors
(the page's content security policy included)."""

import pytest

from tests.browser.conftest import log_in
from tests.factories import stored_version

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_user_finds_a_server_and_reads_how_to_install_it(page, operator_user, screenshot):
    stored_version(
        "io.github.acme/weather",
        description="Forecasts for any city",
        title="Weather",
        packages=[{"registryType": "pypi", "identifier": "acme-weather", "version": "1.0.0"}],
    )
    stored_version("com.example/git", description="Read a Git repository")
    errors = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    log_in(page, "olga", "/login?next=/catalog")

    page.fill("input[name=q]", "weather")
    with page.expect_navigation():
        page.click("form.search button[type=submit]")
    entries = page.locator("[data-catalog] .catalog-entry")
    entries.first.locator("summary").click()
    screenshot(page, "catalog")

    assert entries.count() == 1
    assert entries.first.get_attribute("data-name") == "io.github.acme/weather"
    assert page.locator("pre.command code").first.inner_text() == "uvx acme-weather==1.0.0"
    assert page.locator("pre.command").first.is_visible()
    assert errors == []
