"""The dashboard pages: the server list and its forms, the edit form and the token page, as a browser
without JavaScript uses them (form posts, 303 redirects, flash messages, CSRF)."""

import re
from urllib.parse import urlencode

import pytest
from django.test import Client

from accounts.models import AuditEvent
from servers.models import Server
from tests.factories import ServerFactory

pytestmark = pytest.mark.django_db

# What a browser sends with a form post; the dashboard's URLs then answer with pages, not JSON.
BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


@pytest.fixture
def weather(db):
    return ServerFactory(
        path="/weather",
        name="Weather",
        description="Forecasts by city",
        tags=["forecast", "climate"],
        num_tools=7,
        license="MIT",
        proxy_pass_url="http://127.0.0.1:9002/v1/mcp",  # the edit form below keeps this origin
        headers={"X-Api-Key": "upstream-secret"},
    )


@pytest.fixture
def currenttime(db):
    return ServerFactory(
        path="/currenttime",
        name="Current Time",
        description="What time it is",
        tags=["utility"],
        is_enabled=False,
    )


@pytest.fixture
def secret(db):
    return ServerFactory(path="/team/secret", name="Secret Server", description="Hidden")


def html(response) -> str:
    return response.content.decode()


def row(page: str, path: str) -> str:
    """The dashboard's table row of one server."""
    match = re.search(rf'<tr class="server-row[^"]*" data-path="{re.escape(path)}">(.*?)</tr>', page, re.S)
    assert match, f"no row for {path}"
    return match.group(1)


def flashes(response) -> list[str]:
    return re.findall(r'<li class="flash-\w+">(.*?)</li>', html(response))


def csrf_client(user) -> tuple[Client, str]:
    """A client that enforces CSRF like a browser, and the token a page it loaded would carry."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    client.get("/")
    return client, client.cookies["csrftoken"].value


def snapshot():
    rows = Server.objects.order_by("path").values_list("path", "name", "description", "is_enabled", "tags")
    return list(rows), AuditEvent.objects.count()


# -- no session ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("get", "/"),
        ("get", "/api/"),
        ("get", "/api/edit/weather"),
        ("get", "/edit/weather"),
        ("post", "/edit/weather"),
        ("get", "/api/tokens"),
        ("post", "/api/tokens"),
        ("post", "/toggle/weather"),
        ("post", "/api/register"),
        ("post", "/api/refresh/weather"),
    ],
)
def test_pages_and_browser_posts_without_a_session_go_to_the_login_page(client, weather, method, url):
    before = snapshot()

    response = getattr(client, method)(
        url, {"name": "Changed", "enabled": "off"} if method == "post" else None, headers=BROWSER
    )

    assert response.status_code == 302
    # A page comes back after the login; a form post is not repeated (its page is where to start again).
    expected = f"/login?{urlencode({'next': url})}" if method == "get" and url != "/" else "/login"
    assert response["Location"] == expected
    assert snapshot() == before


# -- the dashboard ---------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["/", "/api/"])
def test_the_dashboard_lists_visible_servers_with_the_actions_the_caller_may_take(
    as_operator, weather, currenttime, secret, url
):
    response = as_operator.get(url)

    assert response.status_code == 200
    page = html(response)
    assert "Secret Server" not in page and "/team/secret" not in page
    assert "2 servers you can see" in page

    weather_row = row(page, "/weather")
    assert '<div class="server-name"><a href="/servers/weather">Weather</a></div>' in weather_row
    assert (
        '<span class="badge status-unknown" data-health-status="unknown">Unknown (never checked)</span>'
        in weather_row
    )
    assert '<td class="num" data-num-tools>7</td>' in weather_row
    assert '<span class="state on" data-state>Enabled</span>' in weather_row
    assert (
        '<form class="inline" method="post" action="/api/toggle/weather" data-toggle data-name="Weather">'
        in weather_row
    )
    assert '<input type="hidden" name="enabled" value="off">' in weather_row
    assert '<form class="inline" method="post" action="/api/refresh/weather" data-refresh>' in weather_row
    assert 'href="/api/edit/weather"' in weather_row
    assert weather_row.count('name="csrfmiddlewaretoken"') == 2
    assert "<li>forecast</li><li>climate</li>" in weather_row

    time_row = row(page, "/currenttime")
    assert '<span class="state off" data-state>Disabled</span>' in time_row
    assert "<form" not in time_row and "Edit" not in time_row  # no toggle, check or edit permission here

    assert 'action="/api/register"' in page  # may register (one path)
    assert "upstream-secret" not in page


def test_a_viewer_gets_no_forms_at_all(client, viewer, weather):
    client.force_login(viewer)

    page = html(client.get("/"))

    assert "Weather" in page
    assert '<form class="inline"' not in row(page, "/weather")
    assert "Register a server" not in page


def test_the_dashboard_offers_enable_on_a_disabled_server(client, member, currenttime):
    client.force_login(member("root", "mcp-registry-admin"))

    time_row = row(html(client.get("/")), "/currenttime")

    assert '<input type="hidden" name="enabled" value="on">' in time_row
    # A disabled server is never checked: its button waits hidden until the server is enabled (live).
    assert (
        '<form class="inline" method="post" action="/api/refresh/currenttime" data-refresh hidden>'
        in time_row
    )


@pytest.mark.parametrize(
    ("query", "shown"), [("CLIM", ["/weather"]), ("time", ["/currenttime"]), ("zzz", [])]
)
def test_the_dashboard_filters_by_query(as_operator, weather, currenttime, query, shown):
    page = html(as_operator.get("/", {"query": query}))

    assert re.findall(r'data-path="([^"]+)"', page) == shown
    assert f'name="query" value="{query}"' in page
    if not shown:
        assert f"No server matching “{query}”." in page


def test_the_summary_and_the_empty_state_speak_of_the_filter(as_operator, weather, currenttime):
    unhealthy = html(as_operator.get("/", {"query": "e", "state": "unhealthy"}))
    disabled = html(as_operator.get("/", {"query": "weather", "state": "disabled"}))

    assert '<p class="muted" data-summary>0 of 2 servers matching “e” are not healthy</p>' in unhealthy
    assert 'data-empty-text="No server matching “e” is not healthy."' in unhealthy
    assert 'No server matching “e” is not healthy. <a href="?query=e">Show all 2</a>' in unhealthy
    assert '<p class="muted" data-summary>0 of 1 server matching “weather” are disabled</p>' in disabled
    assert "There are no servers you can see yet" not in unhealthy + disabled


@pytest.mark.parametrize(
    ("action", "data"),
    [("/toggle/weather", {"enabled": "off"}), ("/api/refresh/weather", {}), ("/edit/weather", "EDIT_FORM")],
)
def test_actions_go_back_to_the_filtered_page_they_came_from(as_operator, weather, action, data):
    data = EDIT_FORM if data == "EDIT_FORM" else data
    response = as_operator.post(action, {**data, "next": "/?query=wea&state=enabled"}, headers=BROWSER)
    elsewhere = as_operator.post(action, {**data, "next": "https://evil.example/"}, headers=BROWSER)

    assert (response.status_code, response["Location"]) == (303, "/?query=wea&state=enabled")
    assert elsewhere["Location"] == "/"


def test_the_rows_carry_the_page_they_are_on(as_operator, weather):
    page = html(as_operator.get("/", {"query": "wea"}))

    assert page.count('<input type="hidden" name="next" value="/?query=wea">') == 3  # toggle, check, register
    assert 'href="/api/edit/weather?next=/%3Fquery%3Dwea"' in page
    edit = html(as_operator.get("/api/edit/weather", {"next": "/?query=wea"}))
    assert '<a class="button secondary" href="/?query=wea">Cancel</a>' in edit


def test_the_dashboard_costs_the_same_queries_for_2_or_40_servers(
    client, member, scope_factory, django_assert_max_num_queries
):
    scope_factory(
        "ops-all", group="ops", ui={p: ["all"] for p in ("list_service", "toggle_service", "modify_service")}
    )
    client.force_login(member("uma", "ops"))
    ServerFactory.create_batch(2)
    # the servers' tools come in one more query, the virtual servers' and the skills' sections ask one
    # each, and the tool changes awaiting the operator's approval one; the first page reads the limits'
    # snapshot (two), which the process keeps until a limit or quarantine changes
    with django_assert_max_num_queries(11):
        assert html(client.get("/")).count('class="server-row') == 2

    ServerFactory.create_batch(38)
    with django_assert_max_num_queries(9):
        assert html(client.get("/")).count('class="server-row') == 40


# -- toggle, refresh and register from the dashboard's forms ---------------------------------------


@pytest.mark.parametrize("url", ["/api/toggle/weather", "/toggle/weather"])
def test_a_toggle_form_post_redirects_home_with_a_flash_message(as_operator, weather, url):
    response = as_operator.post(url, {"enabled": "off"}, headers=BROWSER)

    assert response.status_code == 303
    assert response["Location"] == "/"
    weather.refresh_from_db()
    assert weather.is_enabled is False
    assert flashes(as_operator.get("/")) == ["Server /weather disabled."]
    assert flashes(as_operator.get("/")) == []  # shown once


@pytest.mark.parametrize(
    ("url", "status", "message"),
    [
        ("/toggle/currenttime", 403, "You lack toggle_service permission for /currenttime."),
        ("/toggle/team/secret", 404, "No server is registered at /team/secret."),
        ("/api/refresh/currenttime", 403, "You lack health_check_service permission for /currenttime."),
    ],
)
def test_refused_form_posts_show_the_reason_with_the_status(
    as_operator, currenttime, secret, url, status, message
):
    before = snapshot()

    response = as_operator.post(url, {"enabled": "on"}, headers=BROWSER)

    assert response.status_code == status
    assert f'<p class="error" role="alert">{message}</p>' in html(response)
    assert snapshot() == before


def test_a_form_post_without_a_csrf_token_is_refused(operator, weather):
    client, token = csrf_client(operator)
    before = snapshot()

    refused = client.post("/api/toggle/weather", {"enabled": "off"}, headers=BROWSER)

    assert refused.status_code == 403
    assert "sent without this site's security token" in html(refused)
    assert snapshot() == before
    accepted = client.post(
        "/api/toggle/weather", {"enabled": "off", "csrfmiddlewaretoken": token}, headers=BROWSER
    )
    assert accepted.status_code == 303


def test_a_refresh_form_post_queues_a_check_and_redirects_home(
    as_operator, weather, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as queued:
        response = as_operator.post("/api/refresh/weather", headers=BROWSER)

    assert (response.status_code, response["Location"]) == (303, "/")
    assert len(queued) == 1
    assert flashes(as_operator.get("/")) == ["Health check of /weather queued."]


@pytest.mark.parametrize("url", ["/api/register", "/register"])
def test_a_register_form_post_creates_a_disabled_server_and_redirects_home(as_operator, url):
    form = {
        "name": "New Server",
        "description": "Fresh",
        "path": "newserver",
        "proxy_pass_url": "http://127.0.0.1:9001/mcp",
        "tags": "a, b",
        "is_python": "on",
    }

    response = as_operator.post(url, form, headers=BROWSER)

    assert (response.status_code, response["Location"]) == (303, "/")
    server = Server.objects.get(path="/newserver")
    assert (server.is_enabled, server.tags, server.is_python) == (False, ["a", "b"], True)
    assert flashes(as_operator.get("/")) == [
        "Server /newserver registered; it starts disabled until someone enables it."
    ]


def test_an_invalid_register_form_comes_back_filled_with_the_errors(as_operator):
    form = {"name": "", "description": "Fresh", "path": "newserver", "proxy_pass_url": "not a url"}

    response = as_operator.post("/register", {**form, "next": "/?query=new"}, headers=BROWSER)

    assert (response.status_code, response["Location"]) == (303, "/?query=new#register")
    page = html(as_operator.get(response["Location"]))
    assert '<details class="card register" id="register" open>' in page
    assert '<li class="flash-error">The server was not registered: see the form below.</li>' in page
    assert 'name="path" value="newserver"' in page
    assert 'value="not a url"' in page
    errors = re.findall(r'<p class="field-error">(.*?)</p>', page)
    assert errors == ["This field may not be blank.", "Enter an absolute http:// or https:// URL."]
    assert Server.objects.count() == 0
    again = html(as_operator.get("/?query=new"))  # shown once: a reload is a fresh page
    assert 'value="not a url"' not in again and "field-error" not in again


def test_a_register_form_for_a_taken_path_shows_the_conflict(client, member, weather):
    client.force_login(member("root", "mcp-registry-admin"))
    before = snapshot()
    form = {
        "name": "Other",
        "description": "x",
        "path": "/weather",
        "proxy_pass_url": "http://127.0.0.1:1/mcp",
    }

    response = client.post("/api/register", form, headers=BROWSER)

    assert (response.status_code, response["Location"]) == (303, "/#register")
    page = html(client.get("/"))
    assert '<p class="field-error">A server is already registered at /weather.</p>' in page
    assert snapshot() == before


def test_a_register_form_outside_the_grant_is_refused_with_403(as_operator):
    form = {"name": "X", "description": "x", "path": "elsewhere", "proxy_pass_url": "http://127.0.0.1:1/mcp"}

    response = as_operator.post("/register", form, headers=BROWSER)

    assert (response.status_code, response["Location"]) == (303, "/#register")
    page = html(as_operator.get("/"))
    assert '<p class="error" role="alert">You lack register_service permission for /elsewhere.</p>' in page
    assert Server.objects.count() == 0


def test_a_register_form_from_someone_who_may_not_register_is_refused_with_403(client, viewer):
    client.force_login(viewer)
    form = {"name": "X", "description": "x", "path": "weather2", "proxy_pass_url": "http://127.0.0.1:1/mcp"}

    response = client.post("/register", form, headers=BROWSER)

    assert response.status_code == 403
    assert '<p class="error" role="alert">You lack register_service permission.</p>' in html(response)
    assert Server.objects.count() == 0


# -- edit ------------------------------------------------------------------------------------------

EDIT_FORM = {
    "name": "Weather 2",
    "description": "Better forecasts",
    "proxy_pass_url": "http://127.0.0.1:9002/mcp",
    "tags": "forecast",
    "num_tools": "7",
    "num_stars": "5",
    "license": "Apache-2.0",
}


@pytest.mark.parametrize("url", ["/api/edit/weather", "/edit/weather"])
def test_the_edit_form_is_filled_in_and_never_shows_header_values(as_operator, weather, url):
    response = as_operator.get(url)

    assert response.status_code == 200
    page = html(response)
    assert f'<form method="post" action="{url}">' in page
    assert 'name="name" value="Weather"' in page
    assert f'name="proxy_pass_url" type="url" value="{weather.proxy_pass_url}"' in page
    assert 'name="tags" value="forecast, climate"' in page
    assert 'name="num_tools"' not in page and 'name="num_stars"' not in page  # discovered, not typed
    assert '<option value="streamable-http" selected>Streamable HTTP</option>' in page
    assert 'name="license" value="MIT"' in page
    assert 'name="headers"' not in page  # an operator, not an administrator
    assert 'name="path"' not in page  # the path cannot change
    assert "This server has 1 outbound header." in page
    assert "upstream-secret" not in page and "X-Api-Key" not in page


@pytest.mark.parametrize("url", ["/api/edit/weather", "/edit/weather"])
def test_saving_the_edit_form_updates_the_server_and_redirects_home(as_operator, weather, url):
    response = as_operator.post(url, EDIT_FORM)

    assert (response.status_code, response["Location"]) == (303, "/")
    weather.refresh_from_db()
    assert (weather.name, weather.description, weather.proxy_pass_url) == (
        "Weather 2",
        "Better forecasts",
        "http://127.0.0.1:9002/mcp",
    )
    assert (weather.tags, weather.num_stars, weather.license, weather.is_python) == (
        ["forecast"],
        5,
        "Apache-2.0",
        False,
    )
    assert weather.headers == {"X-Api-Key": "upstream-secret"}  # kept, though the form never showed them
    assert AuditEvent.objects.get().detail == {
        "fields": ["description", "license", "name", "num_stars", "proxy_pass_url", "tags"]
    }
    assert flashes(as_operator.get("/")) == ["Saved Weather 2 (/weather)."]


def test_the_transport_is_chosen_in_the_form(as_operator, weather):
    as_operator.post("/edit/weather", {**EDIT_FORM, "supported_transports": "sse"})

    weather.refresh_from_db()
    assert weather.supported_transports == ["sse"]
    assert '<option value="sse" selected>SSE (legacy)</option>' in html(as_operator.get("/edit/weather"))


def test_only_administrators_set_outbound_headers(as_operator, weather):
    before = snapshot()

    response = as_operator.post("/edit/weather", {**EDIT_FORM, "headers": '{"X-Api-Key": "mine"}'})

    assert response.status_code == 400
    assert '<p class="error" role="alert">Only administrators set outbound headers.</p>' in html(response)
    assert snapshot() == before


@pytest.fixture
def as_admin(client, member):
    client.force_login(member("root", "mcp-registry-admin"))
    return client


def test_administrators_see_how_many_headers_are_set_never_their_values(as_admin, weather):
    page = html(as_admin.get("/edit/weather"))

    assert '<textarea id="f-headers" name="headers"' in page
    assert "1 header set. Their values are never shown" in page
    assert "upstream-secret" not in page and "X-Api-Key" not in page


@pytest.mark.parametrize(
    ("typed", "stored"),
    [
        ("", {"X-Api-Key": "upstream-secret"}),  # an empty box keeps them
        ("  ", {"X-Api-Key": "upstream-secret"}),
        ('{"Authorization": "Bearer new"}', {"Authorization": "Bearer new"}),
        ("{}", {}),
    ],
)
def test_administrators_replace_keep_or_clear_the_headers(as_admin, weather, typed, stored):
    response = as_admin.post("/edit/weather", {**EDIT_FORM, "headers": typed})

    assert response.status_code == 303
    weather.refresh_from_db()
    assert weather.headers == stored


def test_malformed_headers_are_refused_with_the_apis_message(as_admin, weather):
    response = as_admin.post("/edit/weather", {**EDIT_FORM, "headers": '{"Bad Name": "x"}'})

    assert response.status_code == 400
    errors = re.findall(r'<p class="field-error">(.*?)</p>', html(response))
    assert errors == ["&#x27;Bad Name&#x27; is not a valid header name."]
    weather.refresh_from_db()
    assert weather.headers == {"X-Api-Key": "upstream-secret"}


@pytest.mark.parametrize(
    ("typed", "error"),
    [
        ('{"X-Api-Key": "a\\u0000b"}', "X-Api-Key: NUL characters are not allowed."),
        ('{"X-Api-Key": "\\ud800"}', "X-Api-Key: Text must be valid Unicode (a lone surrogate was found)."),
        ("[" * 5000 + "]" * 5000, "JSON is nested deeper than 64 levels."),
    ],
)
def test_the_headers_box_follows_the_one_input_rule(as_admin, weather, typed, error):
    response = as_admin.post("/edit/weather", {**EDIT_FORM, "headers": typed})

    assert response.status_code == 400
    errors = re.findall(r'<p class="field-error">(.*?)</p>', html(response))
    assert errors == [error]
    weather.refresh_from_db()
    assert weather.headers == {"X-Api-Key": "upstream-secret"}


def test_a_blank_tags_box_clears_the_tags(as_operator, weather):
    as_operator.post("/edit/weather", {**EDIT_FORM, "tags": ""})

    weather.refresh_from_db()
    assert weather.tags == []


def test_an_invalid_edit_comes_back_with_the_errors_and_changes_nothing(as_operator, weather):
    before = snapshot()

    response = as_operator.post("/api/edit/weather", {**EDIT_FORM, "name": "", "proxy_pass_url": "ftp://x"})

    assert response.status_code == 400
    page = html(response)
    assert re.findall(r'<p class="field-error">(.*?)</p>', page) == [
        "This field may not be blank.",
        "Enter an absolute http:// or https:// URL.",
    ]
    assert 'name="description" rows="2">Better forecasts</textarea>' in page
    assert snapshot() == before


@pytest.mark.parametrize("method", ["get", "post"])
@pytest.mark.parametrize(
    ("url", "status", "message"),
    [
        ("/edit/currenttime", 403, "You lack modify_service permission for /currenttime."),
        ("/api/edit/team/secret", 404, "No server is registered at /team/secret."),
        ("/api/edit/nothing-here", 404, "No server is registered at /nothing-here."),
    ],
)
def test_edit_refusals(as_operator, currenttime, secret, method, url, status, message):
    before = snapshot()

    response = getattr(as_operator, method)(url, EDIT_FORM if method == "post" else None)

    assert response.status_code == status
    assert f'<p class="error" role="alert">{message}</p>' in html(response)
    assert snapshot() == before


def test_the_edit_form_enforces_csrf(operator, weather):
    client, token = csrf_client(operator)
    before = snapshot()

    refused = client.post("/edit/weather", EDIT_FORM)

    assert refused.status_code == 403
    assert snapshot() == before
    accepted = client.post("/edit/weather", {**EDIT_FORM, "csrfmiddlewaretoken": token})
    assert accepted.status_code == 303


def test_each_dashboard_row_shows_the_gateway_url(as_operator, weather, settings):
    settings.GATEWAY_PUBLIC_URL = "https://mcp.example.test"

    page = html(as_operator.get("/"))

    assert "<code data-gateway-url>https://mcp.example.test/weather/mcp</code>" in page


def test_refused_credentials_count_as_not_healthy_and_the_legend_says_what_each_state_means(
    as_operator, weather, currenttime
):
    from servers.choices import HEALTH_MEANINGS

    weather.health_status, weather.health_detail = "auth-refused", "403 Forbidden: credentials refused"
    currenttime.health_status = "healthy"
    for server in (weather, currenttime):
        server.is_enabled = True
        server.save()

    page = html(as_operator.get("/"))
    not_healthy = html(as_operator.get("/", {"state": "unhealthy"}))

    counts = dict(re.findall(r'data-state-filter="(\w+)"[^>]*>[^<]*<span class="count">(\d+)</span>', page))
    assert counts == {"all": "2", "enabled": "2", "disabled": "0", "unhealthy": "1"}
    assert re.findall(r'<tr class="server-row[^"]*" data-path="([^"]+)"', not_healthy) == ["/weather"]
    assert "403 Forbidden: credentials refused" in page
    legend = re.findall(r'<dt><span class="badge status-([a-z-]+)">([^<]+)</span></dt><dd>', page)
    assert legend == [(state.value, state.label) for state in HEALTH_MEANINGS]
