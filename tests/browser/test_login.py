"""Logging in, in Chromium: the destination is kept through the login page, a wrong password keeps the
username, and an address on another site is never followed."""

import pytest

from tests.browser.conftest import PASSWORD, log_in
from tests.factories import ServerFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_page_asked_for_before_logging_in_is_reached_after(page, site, operator_user, screenshot):
    ServerFactory(path="/weather", name="Weather")

    page.goto("/api/tokens")
    screenshot(page, "login")
    log_in_url = page.url
    page.fill("#username", "olga")
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]")

    assert log_in_url == site.url("/login?next=%2Fapi%2Ftokens")
    page.wait_for_url(site.url("/api/tokens"))
    assert page.locator("h1").first.inner_text() != "Log in"


def test_a_wrong_password_keeps_the_username_and_the_destination(page, site, operator_user):
    page.goto("/api/tokens")
    page.fill("#username", "olga")
    page.fill("#password", "wrong")
    page.click("button[type=submit]")

    page.wait_for_selector("p.error")
    assert page.input_value("#username") == "olga"
    assert page.locator("p.error").inner_text() == "Invalid username or password."
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(site.url("/api/tokens"))


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/x", "/\\evil.example"])
def test_a_destination_on_another_site_is_replaced_by_home(page, site, operator_user, target):
    log_in(page, "olga", path=f"/login?next={target}")

    page.wait_for_url(site.url("/"))
