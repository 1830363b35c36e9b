"""Viewing the console as someone, and deleting a user, in Chromium at 1440 and 390 px: the administrator
sees what that person gets, never their own console. A user who is not staff gets the refusal they would
get (under the banner); a staff member's console greets them and lists their own recent actions, not the
viewer's; a change tried while viewing comes back to the page it was made on, with the banner and the
reason. A user who made tokens is deleted with them."""

import pytest
from django.contrib.admin.models import ADDITION, LogEntry

from tests.browser.conftest import PASSWORD, log_in
from tests.factories import ServerFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def root(member):
    """An administrator with a password, who has made one change in the console."""
    user = member("root", "mcp-registry-admin", is_staff=True)
    user.set_password(PASSWORD)
    user.save()
    LogEntry.objects.create(user=user, object_repr="roots-own-change", action_flag=ADDITION)
    return user


def view_as(page, username: str) -> None:
    page.goto(f"/admin/access/?user={username}")
    with page.expect_navigation():
        page.click(f"input[value='View the console as {username}']")


def test_viewing_as_someone_who_is_not_staff_shows_their_refusal(sized, root, member, screenshot):
    member("cleo", "nobody")
    page, width = sized
    log_in(page, "root")
    view_as(page, "cleo")

    answer = page.goto("/admin/")
    body = page.locator("body").inner_text()
    banner = page.locator("[data-viewing-as]").get_attribute("data-viewing-as")
    screenshot(page, f"view-as-not-staff-{width}")

    assert answer.status == 403
    assert "cleo cannot open the operator console" in body
    assert banner == "cleo"
    assert "root" not in body.replace("View the console as", "")
    assert "Delete" not in body and "Recent actions" not in body


def test_viewing_as_a_staff_member_greets_them_and_lists_their_own_actions(sized, site, root, member):
    ServerFactory(path="/weather", name="Weather")
    stan = member("stan", "nobody", is_staff=True)
    LogEntry.objects.create(user=stan, object_repr="stans-own-change", action_flag=ADDITION)
    page, width = sized
    log_in(page, "root")
    view_as(page, "stan")

    page.goto("/admin/")
    greeting = page.locator("#user-tools").inner_text()
    recent = page.locator("#recent-actions-module").inner_text()

    assert "STAN" in greeting.upper() and "ROOT" not in greeting.upper()
    assert "stans-own-change" in recent and "roots-own-change" not in recent


def test_a_change_tried_while_viewing_comes_back_to_the_page_with_the_reason(sized, site, root, member):
    member("stan", "nobody", is_staff=True)
    page, width = sized
    log_in(page, "root")
    view_as(page, "stan")

    page.goto("/admin/password_change/")
    page.fill("#id_old_password", PASSWORD)
    page.fill("#id_new_password1", "another horse battery staple")
    page.fill("#id_new_password2", "another horse battery staple")
    with page.expect_navigation():
        page.click("input[type=submit]")
    url, body = page.url, page.locator("body").inner_text()
    banner = page.locator("[data-viewing-as]").get_attribute("data-viewing-as")

    assert url == site.url("/admin/password_change/")
    assert "read only: stop viewing to make changes" in body
    assert banner == "stan"
    assert root.__class__.objects.get(pk=root.pk).check_password(PASSWORD)  # nothing was changed


def test_the_effective_access_view_fits_a_phone_and_a_desk(sized, root, member, scope_factory, screenshot):
    from tests.browser.conftest import overflow
    from tests.factories import ToolFactory

    page, width = sized
    clock = ServerFactory(path="/clock", name="Clock")
    for index in range(30):
        ToolFactory(server=clock, name=f"a_rather_long_tool_name_number_{index}")
    rules = [{"server": "/clock", "methods": ["*"], "tools": ["*"]}]
    scope_factory("clock-all", group="clockers", server_rules=rules)
    member("cleo", "clockers")
    log_in(page, "root", "/login?next=/admin/access/%3Fuser%3Dcleo")
    page.wait_for_selector("#access-servers")
    screenshot(page, f"effective-access-{width}")

    assert overflow(page) == 0


def test_an_administrator_deletes_a_user_who_made_a_token(sized, root, member, token_for):
    from accounts.models import IssuedToken, User

    page, _ = sized
    dana = member("dana", "nobody")
    token_for(dana)
    log_in(page, "root", f"/login?next=/admin/accounts/user/{dana.pk}/delete/")
    question = page.locator("#content").inner_text()
    with page.expect_navigation():
        page.click("input[type=submit]")

    assert "no permission" not in question.lower()
    assert 'Are you sure you want to delete the user "dana"?' in question
    assert "Issued token: dana" in question
    assert "was deleted successfully" in page.locator("ul.messagelist").inner_text()
    assert not User.objects.filter(username="dana").exists() and not IssuedToken.objects.exists()
