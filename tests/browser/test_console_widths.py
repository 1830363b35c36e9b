"""The console at a desktop's 1440 px and a phone's 390 px, in Chromium: nothing wider than the screen, a
header that wraps, usable tap targets, a refused registration shown where the eye is, actions that keep
the filter, server-chosen login messages, logging out, the public status page without JavaScript, and the
admin's icon. Screenshots go to var/test/screenshots/widths-*.png."""

import json

import pytest

from tests.browser.conftest import WIDTHS, in_view, log_in, overflow
from tests.factories import ServerFactory
from tests.mcp_servers import time_server_fixture  # noqa: F401
from tests.search import semantic_fixtures

embedding_model = semantic_fixtures.embedding_model

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_dashboard_tokens_and_scope_form_fit_the_screen(sized, operator_user, admin_user, screenshot):
    page, width = sized
    ServerFactory(path="/weather", name="Weather", description="Forecasts by city " * 8, tags=["forecast"])
    log_in(page, "olga")

    assert overflow(page) == 0
    logout = page.locator("header button", has_text="Log out")
    assert logout.is_visible() and in_view(page, "header button")
    screenshot(page, f"widths-dashboard-{width}")
    page.goto("/api/tokens")
    page.fill("#description", "laptop")
    page.click("form[action='/api/tokens'] button[type=submit]")  # a token, so its table has a row
    page.wait_for_selector("#new-token")
    page.goto("/api/tokens")
    page.wait_for_selector("table.my-tokens tr[data-token]")
    assert overflow(page) == 0
    screenshot(page, f"widths-tokens-{width}")

    admin_user.set_password("correct horse battery staple")
    admin_user.save()
    page.context.clear_cookies()
    log_in(page, admin_user.username, "/login?next=/admin/accounts/scope/add/")
    assert overflow(page) == 0
    assert page.locator("link[rel=icon]").get_attribute("href") == "/static/favicon.svg"
    screenshot(page, f"widths-admin-scope-{width}")


def test_register_a_server_is_a_target_a_finger_can_tap(sized, operator_user):
    page, width = sized
    log_in(page, "olga")
    summary = page.locator("details.register summary")
    summary.scroll_into_view_if_needed()

    assert summary.bounding_box()["height"] >= (44 if width == "phone" else 20)
    summary.tap() if width == "phone" else summary.click()
    assert page.locator("details.register").get_attribute("open") == ""


def test_a_refused_registration_is_shown_in_view_filled_in_and_never_posted_again(
    sized, site, operator_user, screenshot
):
    page, width = sized
    ServerFactory(path="/weather", name="Weather")
    log_in(page, "olga", "/login?next=/%3Fquery%3Dwea")
    page.click("details.register summary")
    page.fill("#f-name", "Clock")
    page.fill("#f-path", "/weather")
    page.fill("#f-proxy_pass_url", "http://127.0.0.1:9/mcp")
    page.fill("#f-description", "What time it is")
    with page.expect_navigation():
        page.click("details.register button[type=submit]")

    assert page.url == site.url("/?query=wea#register")
    assert page.locator("details.register .field-error").inner_text() == (
        "A server is already registered at /weather."
    )
    assert in_view(page, "details.register .field-error")
    assert page.input_value("#f-name") == "Clock"
    screenshot(page, f"widths-register-refused-{width}")
    posts = []
    page.on("request", lambda request: posts.append(request) if request.method == "POST" else None)
    page.reload()
    assert posts == []
    assert page.locator("details.register .field-error").count() == 0


def test_an_action_keeps_the_filter_and_the_search(sized, site, operator_user):
    page, _ = sized
    ServerFactory(path="/weather", name="Weather")
    ServerFactory(path="/clock", name="Clock")
    log_in(page, "olga", "/login?next=/%3Fquery%3Dwea%26state%3Denabled")

    with page.expect_navigation():
        page.click("button[aria-label='Disable Weather']")

    assert page.url == site.url("/?query=wea&state=enabled")
    assert page.locator("[data-summary]").inner_text() == "0 of 1 server matching “wea” are enabled"
    assert page.locator("td.empty").inner_text() == "No server matching “wea” is enabled. Show all 1"


def test_the_login_page_never_shows_words_a_link_brings(sized, screenshot):
    page, width = sized
    page.goto("/login?error=Your+account+is+locked%2C+call+%2B1+555+0100")

    assert page.locator("p.error").inner_text() == "Login failed. Try again."
    screenshot(page, f"widths-login-forged-error-{width}")


def test_logging_out_by_address_asks_then_says_so(sized, site, operator_user, screenshot):
    page, width = sized
    log_in(page, "olga")
    page.goto("/logout")
    screenshot(page, f"widths-logout-{width}")
    with page.expect_navigation():
        page.click("main button[type=submit]")

    assert page.url == site.url("/login")
    assert page.locator(".flash li").inner_text() == "You have logged out."
    assert overflow(page) == 0


def test_the_status_page_without_javascript_names_servers_with_readable_times(
    browser, site, sized, screenshot
):
    _, width = sized
    from django.utils import timezone

    ServerFactory(path="/weather", name="Weather", health_status="healthy", last_checked_at=timezone.now())
    context = browser.new_context(
        base_url=site.url(""),
        java_script_enabled=False,
        viewport=dict(zip(("width", "height"), WIDTHS[width], strict=True)),
    )
    page = context.new_page()
    page.goto("/status")

    row = page.locator("tr[data-path='/weather']")
    assert row.locator(".server-name").inner_text() == "Weather"
    assert row.locator("[data-last-checked]").inner_text() == "checked just now"
    assert page.locator("header a", has_text="Log in").get_attribute("href") == "/login?next=/status"
    assert overflow(page) == 0
    screenshot(page, f"widths-status-no-javascript-{width}")
    context.close()


def test_the_next_check_is_counted_down_live(sized, operator_user):
    page, _ = sized
    from datetime import timedelta

    from django.utils import timezone

    ServerFactory(path="/weather", name="Weather", health_status="healthy", last_checked_at=timezone.now())
    log_in(page, "olga")
    soon = (timezone.now() + timedelta(minutes=3, seconds=30)).isoformat()

    page.evaluate(
        "iso => { document.querySelector('[data-next-check]').dataset.fromNow = iso;"
        " window.registryTimes.refresh(); }",
        soon,
    )

    assert page.locator("[data-next-check]").inner_text() == "next check in 3 minutes"


def test_search_results_are_links_and_weak_matches_are_not_listed(
    sized, site, operator_user, embedding_model
):
    page, width = sized
    from search.services import agents_embed
    from tests.factories import AgentFactory

    AgentFactory(
        path="/currency-agent",
        name="Currency Agent",
        description="Converts money between currencies",
        is_enabled=True,
        visibility="public",
    )
    AgentFactory(
        path="/poet",
        name="Poet",
        description="Writes poems about the sea",
        is_enabled=True,
        visibility="public",
    )
    assert agents_embed() == 2
    log_in(page, "olga", "/login?next=/search%3Fq%3Dconvert%2Bcurrency")

    assert page.locator("[data-search-results] .hit-name").all_inner_texts() == ["Currency Agent"]
    with page.expect_navigation():
        page.click("[data-search-results] .hit-name a")
    assert page.url == site.url("/agents#agent/currency-agent")
    assert overflow(page) == 0


def test_a_servers_row_offers_its_client_configuration_and_a_token_for_it(sized, site, operator_user):
    page, _ = sized
    ServerFactory(path="/weather", name="Weather")
    ServerFactory(path="/clock", name="Clock")
    log_in(page, "olga")

    row = page.locator("tr[data-path='/weather']")
    row.locator("[data-connect] summary").click()
    config = json.loads(row.locator("[data-connect] pre").inner_text())
    assert config == {"mcpServers": {"weather": {"type": "http", "url": site.url("/weather/mcp")}}}
    with page.expect_navigation():
        row.locator("[data-connect] a").click()
    assert page.url == site.url("/api/tokens?server=/weather#token-form")
    page.fill("#description", "for weather")
    with page.expect_navigation():
        page.click("#token-form button[type=submit]")
    token = page.locator("#new-token").input_value()
    configured = json.loads(page.locator("textarea[aria-label='MCP client configuration']").input_value())
    assert configured == {
        "mcpServers": {
            "weather": {
                "type": "http",
                "url": site.url("/weather/mcp"),
                "headers": {"Authorization": f"Bearer {token}"},
            }
        }
    }
    assert overflow(page) == 0


def test_an_administrators_token_for_one_server_defaults_to_its_tools_and_says_what_it_can_do(
    sized, member, screenshot
):
    from tests.browser.conftest import PASSWORD

    page, width = sized
    clock = ServerFactory(path="/clock", name="Clock")
    for name in ("add", "current_time", "echo"):
        clock.tools.create(name=name)
    root = member("root", "mcp-registry-admin")
    root.set_password(PASSWORD)
    root.save()
    log_in(page, "root", "/login?next=/api/tokens%3Fserver%3D/clock")

    assert page.locator("input[name=scope_mode][value=server]").is_checked()
    assert not page.locator("input[name=scope_mode][value=admin]").is_checked()
    page.uncheck("input[name=tools][value=current_time]")
    preview = page.locator("[data-preview]").inner_text()
    screenshot(page, f"widths-token-for-a-server-{width}")
    assert overflow(page) == 0
    with page.expect_navigation():
        page.click("#token-form button[type=submit]")

    assert preview == "This token can call add, echo on /clock; cannot administer."
    assert page.locator("[data-granted]").inner_text() == "can call add, echo on /clock; cannot administer"
    page.reload()
    assert page.locator("#new-token").count() == 0  # shown once: a reload makes and shows no token


def test_register_a_server_is_in_the_first_screen_however_many_servers_there_are(
    sized, member, scope_factory
):
    from tests.browser.conftest import PASSWORD

    page, _ = sized
    for index in range(30):
        ServerFactory(path=f"/weather-{index}", name=f"Weather {index}")
    scope_factory("all-ops", group="all-ops", ui={"list_service": ["all"], "register_service": ["all"]})
    ops = member("otto", "all-ops")
    ops.set_password(PASSWORD)
    ops.save()
    log_in(page, "otto")

    assert in_view(page, "details.register summary")


@pytest.mark.parametrize(
    "changelist", ["/admin/servers/server/", "/admin/catalog/serverversion/", "/admin/catalog/upstream/"]
)
def test_every_column_of_the_admin_lists_is_visible_at_1440(browser, site, member, changelist, screenshot):
    from django.utils import timezone

    from catalog.models import ServerVersion, Upstream
    from tests.browser.conftest import PASSWORD

    upstream = Upstream.objects.create(
        name="official-registry", url="https://registry.modelcontextprotocol.example/v0.1", is_enabled=True
    )
    now = timezone.now()
    for index in range(3):
        ServerFactory(path=f"/weather-forecasts-{index}", name=f"Weather forecasts {index}", num_tools=12)
        ServerVersion.objects.create(
            name=f"io.github.example-organisation/weather-forecasts-{index}",
            version="1.10.2",
            document={"name": "x", "description": "d", "version": "1.10.2"},
            status_changed_at=now,
            published_at=now,
            updated_at=now,
            is_latest=True,
            upstream=upstream,
        )
    root = member("root", "mcp-registry-admin", is_staff=True)
    root.set_password(PASSWORD)
    root.save()
    context = browser.new_context(base_url=site.url(""), viewport={"width": 1440, "height": 900})
    page = context.new_page()
    log_in(page, "root", f"/login?next={changelist}")

    clipped = page.evaluate(
        """() => {
          const results = document.querySelector('#changelist .results');
          const filter = document.querySelector('#changelist-filter');
          const table = document.querySelector('#result_list').getBoundingClientRect();
          return {
            scrolls: results.scrollWidth - results.clientWidth,
            overlap: filter ? table.right - filter.getBoundingClientRect().left : 0,
            beyond: table.right - window.innerWidth,
          };
        }"""
    )
    screenshot(page, f"widths-admin-list-{changelist.strip('/').replace('/', '-')}")
    context.close()

    assert clipped["scrolls"] <= 0 and clipped["overlap"] <= 0 and clipped["beyond"] <= 0, clipped


def test_the_scope_form_adds_rules_without_saving_and_offers_the_chosen_servers_tools(
    sized, admin_user, screenshot
):
    from accounts.models import Scope

    page, width = sized
    fx = ServerFactory(path="/fx", name="FX")
    for name in ("convert_currency", "list_currencies"):
        fx.tools.create(name=name)
    ServerFactory(path="/weather", name="Weather")
    admin_user.set_password("correct horse battery staple")
    admin_user.save()
    log_in(page, admin_user.username, "/login?next=/admin/accounts/scope/add/")

    page.fill("#id_name", "three-rules")
    page.click("[data-add-rule]")
    rows = page.locator("[data-rule-row]")
    assert rows.count() == 3
    for index, (server, preset) in enumerate((("/fx", "call"), ("/weather", "read"), ("*", "all"))):
        rows.nth(index).locator("[data-rule-server]").select_option(server)
        rows.nth(index).locator("select[name$=-preset]").select_option(preset)
    page.check("input[name='server_rules-0-tool_choices'][value='convert_currency']")
    assert rows.nth(1).locator("[data-rule-tools] input").count() == 0  # /weather has no known tools
    assert overflow(page) == 0
    screenshot(page, f"widths-admin-scope-rules-{width}")
    with page.expect_navigation():
        page.click("input[name=_save]")

    rules = Scope.objects.get(name="three-rules").server_rules
    assert [(rule["server"], rule.get("tools")) for rule in rules] == [
        ("/fx", ["convert_currency"]),
        ("/weather", None),
        ("*", None),
    ]
    assert rules[2]["methods"] == "*"


def test_an_opened_server_row_and_an_opened_install_section_stay_within_the_screen(
    sized, operator_user, screenshot
):
    from tests.factories import stored_version

    page, width = sized
    weather = ServerFactory(path="/weather", name="Weather", description="Forecasts by city " * 6)
    weather.tools.create(
        name="get_forecast_for_a_city_with_a_rather_long_name",
        description="The forecast " * 10,
        input_schema={
            "type": "object",
            "properties": {"city_name_in_the_local_language": {"type": "string"}},
        },
    )
    stored_version(
        "io.github.acme-corporation/weather-forecasts-for-everyone",
        description="Forecasts",
        packages=[
            {
                "registryType": "oci",
                "identifier": "ghcr.io/acme-corporation/weather-forecasts-for-everyone",
                "version": "1.0.0",
                "transport": {"type": "stdio"},
                "environmentVariables": [
                    {"name": "WEATHER_FORECASTS_API_KEY_FOR_EVERYONE", "isRequired": True}
                ],
            }
        ],
    )
    log_in(page, "olga")

    row = page.locator("tr[data-path='/weather']")
    row.locator("[data-connect] summary").click()
    row.locator("[data-tools] > summary").click()
    row.locator("details.schema summary").first.click()
    dashboard = overflow(page)
    clipped = page.evaluate(
        """() => {
          const card = document.querySelector('.table-wrap').getBoundingClientRect();
          return [...document.querySelectorAll("tr[data-path='/weather'] *")]
            .filter((element) => element.getBoundingClientRect().right > card.right + 1)
            .map((element) => element.tagName + '.' + element.className);
        }"""
    )
    screenshot(page, f"widths-dashboard-opened-{width}")
    page.goto("/catalog")
    page.locator("details.way summary").first.click()
    catalog = overflow(page)
    screenshot(page, f"widths-catalog-opened-{width}")
    header_rows = page.evaluate(
        "() => Math.round(document.querySelector('header').getBoundingClientRect().height)"
    )

    assert (dashboard, catalog) == (0, 0)
    assert clipped == []  # nothing in the opened row reaches past its card (where it would be cut off)
    assert header_rows <= (110 if width == "phone" else 70), header_rows


def test_a_servers_page_fits_the_screen_and_is_reached_from_its_row(sized, operator_user, screenshot):
    page, width = sized
    weather = ServerFactory(
        path="/weather", name="Weather", description="Forecasts by city", health_status="healthy"
    )
    weather.tools.create(
        name="get_forecast",
        description="The forecast for a city",
        input_schema={
            "type": "object",
            "properties": {"city": {"type": "string", "description": "the city's name, in any language"}},
            "required": ["city"],
        },
    )
    log_in(page, "olga")

    with page.expect_navigation():
        page.click("tr[data-path='/weather'] .server-name a")
    page.locator("details.host summary").first.click()
    screenshot(page, f"widths-server-page-{width}")

    assert page.url.endswith("/servers/weather")
    assert page.locator("h1").inner_text() == "Weather"
    assert page.locator("[data-tool='get_forecast'] td[data-label=Parameter]").inner_text() == "city"
    assert overflow(page) == 0


def test_a_tool_is_tried_from_its_servers_page_through_the_gateway_as_the_viewer(
    sized, member, scope_factory, time_server, screenshot
):
    from tests.browser.conftest import PASSWORD

    page, width = sized
    clock = ServerFactory(path="/clock", name="Clock", proxy_pass_url=time_server, health_status="healthy")
    for name in ("add", "echo"):
        clock.tools.create(
            name=name, input_schema={"type": "object", "properties": {"a": {"type": "integer"}}}
        )
    rules = [{"server": "/clock", "methods": ["initialize", "tools/list", "tools/call"], "tools": ["add"]}]
    scope_factory("clock-add", group="clockers", server_rules=rules)
    user = member("cleo", "clockers")
    user.set_password(PASSWORD)
    user.save()
    log_in(page, "cleo", "/login?next=/servers/clock")

    tool = page.locator("[data-tool='add']")
    tool.locator("details.try summary").click()
    tool.locator("textarea").fill('{"a": 2, "b": 3}')
    tool.locator("button[type=submit]").click()
    result = tool.locator("[data-try-result]")
    result.wait_for()
    page.wait_for_function("(out) => !out.textContent.startsWith('Calling')", arg=result.element_handle())
    screenshot(page, f"widths-server-try-it-{width}")

    assert '"text": "5"' in result.inner_text()
    assert page.locator("[data-tool]").count() == 1  # echo is neither shown nor offered: add only


def test_connecting_a_secret_from_the_connections_page_fits_the_screen(
    sized, operator_user, scope_factory, screenshot
):
    page, width = sized
    scope_factory(
        "github-users",
        group="console-ops",
        server_rules=[{"server": "/github", "methods": ["*"], "tools": ["*"]}],
        ui={"list_service": ["github"]},
    )
    ServerFactory(
        path="/github",
        name="GitHub",
        proxy_pass_url="https://api.githubcopilot.example/mcp",
        upstream_auth="user_secret",
        user_secret_header="Authorization: Bearer {secret}",
    )
    log_in(page, "olga")

    page.goto("/connections")
    screenshot(page, f"widths-connections-{width}")
    listed_fits = overflow(page)
    with page.expect_navigation():
        page.click("tr[data-connection='/github'] a.button")
    screenshot(page, f"widths-connect-{width}")
    form_fits = overflow(page)
    said = page.locator("#connect").inner_text()
    page.fill("#secret", "ghp_personal_access_token")
    with page.expect_navigation():
        page.click("#connect button[type=submit]")

    assert (listed_fits, form_fits, overflow(page)) == (0, 0, 0)
    assert "in the Authorization header to https://api.githubcopilot.example:443" in said
    assert (
        page.locator("tr[data-connection='/github'] [data-state]").get_attribute("data-state") == "connected"
    )
    assert "ghp_personal_access_token" not in page.content()


def test_a_virtual_servers_members_are_plain_fields_that_fit_the_screen(sized, admin_user, screenshot):
    from virtual_servers.services import virtual_server_create

    page, width = sized
    ServerFactory(path="/clock", name="Clock")
    ServerFactory(path="/notes", name="Notes")
    virtual = virtual_server_create(
        actor=None,
        path="/team",
        definition={"name": "Team", "members": [{"server": "/clock", "tools": {"include": ["add"]}}]},
    )
    admin_user.set_password("correct horse battery staple")
    admin_user.save()
    change = f"/admin/virtual_servers/virtualserver/{virtual.pk}/change/"
    log_in(page, admin_user.username, f"/login?next={change}")
    page.wait_for_selector("[data-members]")

    assert page.locator("[data-member-row]").count() == 3  # the member and two empty rows
    assert page.input_value("#id_members-0-tools_names") == "add"
    assert page.locator("#id_members-0-tools_mode").input_value() == "include"
    page.select_option("#id_members-1-server", "/notes")
    with page.expect_navigation():
        page.click("input[name=_continue]")
    assert "was changed successfully" in page.locator("ul.messagelist").inner_text()
    assert page.locator("[data-member-row]").count() == 4
    assert overflow(page) == 0
    screenshot(page, f"widths-virtual-server-{width}")
