"""The dashboard's JSON API (session cookie): listing, toggle, register, details, tools and refresh, with
every refusal (no session, not visible, not allowed, no CSRF token) leaving the registry unchanged."""

from datetime import UTC, datetime

import pytest
from django.test import Client

from accounts.models import AuditEvent
from servers.choices import HealthStatus
from servers.models import Server
from servers.selectors import LIST_LIMIT
from tests.factories import ServerFactory, ToolFactory

pytestmark = pytest.mark.django_db

CHECKED_AT = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
REGISTER_FORM = {
    "name": "New Server",
    "description": "Freshly built",
    "path": "newserver",
    "proxy_pass_url": "http://127.0.0.1:9001/mcp",
    "tags": "fresh, beta",
    "num_tools": "3",
    "license": "MIT",
}


@pytest.fixture
def weather(db):
    return ServerFactory(
        path="/weather",
        name="Weather",
        description="Forecasts by city",
        tags=["forecast", "Climate"],
        num_tools=2,
        headers={"X-Api-Key": "upstream-secret"},
        last_checked_at=CHECKED_AT,
    )


@pytest.fixture
def currenttime(db):
    return ServerFactory(
        path="/currenttime", name="Current Time", description="What time it is", tags=["utility"], num_tools=1
    )


@pytest.fixture
def secret(db):
    """A server none of the non-admin callers may see."""
    return ServerFactory(path="/team/secret", name="Secret", description="Hidden", tags=["internal"])


def error_body(response, detail, code):
    return {"detail": detail, "error_code": code, "request_id": response["X-Request-ID"]}


def snapshot():
    """Everything a refused request must leave alone."""
    rows = Server.objects.order_by("path").values_list("path", "name", "is_enabled", "health_status")
    return list(rows), AuditEvent.objects.count()


# -- no session ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("get", "/api/servers"),
        ("post", "/api/toggle/weather"),
        ("post", "/toggle/weather"),
        ("post", "/api/register"),
        ("post", "/register"),
        ("get", "/api/server_details/weather"),
        ("get", "/api/server_details/all"),
        ("get", "/api/tools/weather"),
        ("get", "/api/tools/all"),
        ("post", "/api/refresh/weather"),
    ],
)
def test_every_endpoint_answers_401_without_a_session_and_changes_nothing(client, weather, method, url):
    before = snapshot()

    response = getattr(client, method)(url, REGISTER_FORM if method == "post" else None)

    assert response.status_code == 401
    assert response.json() == error_body(
        response, "Authentication credentials were not provided.", "not_authenticated"
    )
    assert response["WWW-Authenticate"] == 'Session realm="mcp-gateway-registry"'
    assert snapshot() == before


def test_a_valid_bearer_token_reads_the_dashboard_api_in_json_and_in_the_browsable_api(
    client, weather, member, token_for
):
    token = token_for(member("ada", "mcp-registry-admin"))

    as_json = client.get("/api/servers", headers={"Authorization": f"Bearer {token}"})
    as_page = client.get("/api/servers", headers={"Authorization": f"Bearer {token}", "Accept": "text/html"})
    wrong = client.get("/api/servers", headers={"Authorization": "Bearer anything"})

    assert [row["path"] for row in as_json.json()["servers"]] == ["/weather"]
    assert as_page.status_code == 200 and "/weather" in as_page.content.decode()
    assert "Authentication credentials were not provided" not in as_page.content.decode()
    assert (wrong.status_code, wrong.json()["error_code"]) == (401, "token_malformed")


# -- GET /api/servers ------------------------------------------------------------------------------


def test_the_listing_shows_only_the_servers_the_caller_may_see(as_operator, weather, currenttime, secret):
    response = as_operator.get("/api/servers")

    assert response.status_code == 200
    assert response.json() == {
        "servers": [
            {
                "path": "/currenttime",
                "name": "Current Time",
                "description": "What time it is",
                "is_enabled": True,
                "health_status": "unknown",
            },
            {
                "path": "/weather",
                "name": "Weather",
                "description": "Forecasts by city",
                "is_enabled": True,
                "health_status": "unknown",
            },
        ],
        "truncated": False,
    }


def test_an_admin_sees_every_server(client, member, weather, currenttime, secret):
    client.force_login(member("root", "mcp-registry-admin"))

    paths = [s["path"] for s in client.get("/api/servers").json()["servers"]]

    assert paths == ["/currenttime", "/team/secret", "/weather"]


@pytest.mark.parametrize(
    ("query", "paths"),
    [
        ("WEATH", ["/weather"]),  # name, any case
        ("currentt", ["/currenttime"]),  # path
        ("by city", ["/weather"]),  # description
        ("climat", ["/weather"]),  # part of a tag
        ("util", ["/currenttime"]),
        ("  time  ", ["/currenttime"]),  # trimmed
        ("secret", []),  # matches, but not visible to the caller
        ("forecast,climate", []),  # never across two tags
        ("100%", []),  # LIKE wildcards are literal
        ("", ["/currenttime", "/weather"]),
    ],
)
def test_the_query_filters_by_name_path_description_and_tags(
    as_operator, weather, currenttime, secret, query, paths
):
    response = as_operator.get("/api/servers", {"query": query})

    assert [s["path"] for s in response.json()["servers"]] == paths


@pytest.mark.parametrize("url", ["/api/servers", "/api/server_details/all", "/api/tools/all"])
def test_listings_cost_the_same_queries_for_2_or_40_servers(
    client, member, scope_factory, django_assert_max_num_queries, url
):
    """Session, user, groups and scopes, then one query for the servers (and one for their tools)."""
    scope_factory("all", group="everyone", ui={"list_service": ["all"]})
    client.force_login(member("uma", "everyone"))
    budget = 6 if url == "/api/server_details/all" else 5
    ToolFactory.create_batch(2)
    with django_assert_max_num_queries(budget):
        assert client.get(url).status_code == 200

    ToolFactory.create_batch(38)
    with django_assert_max_num_queries(budget):
        body = client.get(url).json()
    assert len(body.get("servers", body.get("tools"))) == 40


def test_the_listing_is_bounded_and_says_so(client, member):
    client.force_login(member("root", "mcp-registry-admin"))
    Server.objects.bulk_create(
        Server(path=f"/s{n:03}", name=f"S{n}", proxy_pass_url="http://127.0.0.1:9/mcp")
        for n in range(LIST_LIMIT + 1)
    )

    body = client.get("/api/servers").json()

    assert (len(body["servers"]), body["servers"][-1]["path"], body["truncated"]) == (
        LIST_LIMIT,
        "/s499",
        True,
    )


# -- POST /api/toggle/{path} and /toggle/{path} ----------------------------------------------------


@pytest.mark.parametrize("url", ["/api/toggle/weather", "/toggle/weather", "/api/toggle//weather/"])
@pytest.mark.parametrize("value", ["on", "true", "1", "TRUE"])
def test_toggle_enables_with_on_true_or_1(as_operator, weather, url, value):
    Server.objects.filter(pk=weather.pk).update(is_enabled=False, health_status=HealthStatus.DISABLED)

    response = as_operator.post(url, {"enabled": value})

    assert response.status_code == 200
    assert response.json() == {
        "path": "/weather",
        "is_enabled": True,
        "health_status": "unknown",
        "message": "Server /weather enabled.",
    }
    weather.refresh_from_db()
    assert (weather.is_enabled, weather.health_status) == (True, "unknown")
    event = AuditEvent.objects.get()
    assert (event.action, event.target, event.actor_name) == ("server.enable", "server:/weather", "olga")


@pytest.mark.parametrize("form", [{}, {"enabled": "off"}, {"enabled": "false"}, {"enabled": "yes"}])
def test_toggle_disables_when_enabled_is_omitted_or_anything_else(as_operator, weather, form):
    response = as_operator.post("/api/toggle/weather", form)

    assert response.status_code == 200
    assert response.json() == {
        "path": "/weather",
        "is_enabled": False,
        "health_status": "disabled",
        "message": "Server /weather disabled.",
    }
    weather.refresh_from_db()
    assert weather.is_enabled is False


def test_toggle_accepts_a_json_body(as_operator, weather):
    Server.objects.filter(pk=weather.pk).update(is_enabled=False)

    response = as_operator.post("/api/toggle/weather", {"enabled": True}, content_type="application/json")

    assert response.json()["is_enabled"] is True


def test_enabling_queues_a_health_check_and_disabling_does_not(
    as_operator, weather, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as disabling:
        as_operator.post("/api/toggle/weather", {"enabled": "off"})
    with django_capture_on_commit_callbacks() as enabling:
        as_operator.post("/api/toggle/weather", {"enabled": "on"})

    # Each publishes its health change and moves the route and listing epochs; only enabling queues a check.
    named = [[getattr(callback, "__qualname__", "") for callback in each] for each in (disabling, enabling)]
    assert [sorted(names) for names in named] == [
        # the route, listings and virtual servers' caches are invalidated again on commit (servers/cache.py,
        # virtual_servers/cache.py: a disabled server is no virtual server's member meanwhile), and each
        # audit row joins the audit chain (accounts/services/audit_chain.py)
        ["EpochCache._bump_now"] * 3 + ["audit_chain_extend", "entry_changed.<locals>.<lambda>"],
        ["EpochCache._bump_now"] * 3
        + ["audit_chain_extend", "entry_changed.<locals>.<lambda>", "server_refresh.<locals>.<lambda>"],
    ]


def test_toggling_a_multi_segment_path(client, member, scope_factory):
    ServerFactory(path="/team/weather", is_enabled=True)
    scope_factory(
        "team", group="team", ui={"list_service": ["team/weather"], "toggle_service": ["team/weather"]}
    )
    client.force_login(member("tess", "team"))

    response = client.post("/api/toggle/team/weather", {"enabled": "off"})

    assert response.status_code == 200
    assert response.json()["path"] == "/team/weather"
    assert Server.objects.get(path="/team/weather").is_enabled is False


@pytest.mark.parametrize(
    "url", ["/api/toggle/nothing-here", "/api/toggle/team/secret", "/toggle/team/secret"]
)
def test_toggle_answers_404_for_unknown_and_invisible_servers(as_operator, secret, url):
    before = snapshot()

    response = as_operator.post(url, {"enabled": "off"})

    assert response.status_code == 404
    path = "/" + url.split("/toggle/")[1]
    assert response.json() == error_body(response, f"No server is registered at {path}.", "not_found")
    assert snapshot() == before


@pytest.mark.parametrize("url", ["/api/toggle/currenttime", "/toggle/currenttime"])
def test_toggle_answers_403_for_a_visible_server_without_toggle_permission(as_operator, currenttime, url):
    before = snapshot()

    response = as_operator.post(url, {"enabled": "off"})

    assert response.status_code == 403
    assert response.json() == error_body(
        response, "You lack toggle_service permission for /currenttime.", "permission_denied"
    )
    assert snapshot() == before


def test_toggle_enforces_csrf(operator, weather):
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    before = snapshot()

    refused = client.post("/api/toggle/weather", {"enabled": "off"})

    assert refused.status_code == 403
    assert refused.json()["detail"] == "CSRF Failed: CSRF cookie not set."
    assert snapshot() == before
    client.get("/")  # any page with a form sets the cookie
    token = client.cookies["csrftoken"].value
    accepted = client.post("/api/toggle/weather", {"enabled": "off"}, headers={"X-CSRFToken": token})
    assert accepted.status_code == 200


# -- POST /api/register and /register --------------------------------------------------------------


@pytest.mark.parametrize("url", ["/api/register", "/register"])
def test_register_creates_a_disabled_server(as_operator, operator, url):
    response = as_operator.post(url, REGISTER_FORM)

    assert response.status_code == 201
    assert response.json() == {
        "message": "Server /newserver registered; it starts disabled until someone enables it.",
        "service": {
            "path": "/newserver",
            "name": "New Server",
            "description": "Freshly built",
            "proxy_pass_url": "http://127.0.0.1:9001/mcp",
            "tags": ["fresh", "beta"],
            "num_tools": 3,
            "num_stars": 0,
            "is_python": False,
            "license": "MIT",
            "is_enabled": False,
            "health_status": "disabled",
            "health_detail": "",
            "last_checked_at": None,
            "supported_transports": [],
            "auth_type": "none",
            "auth_provider": "",
            "upstream_auth": "none",
            "user_secret_header": "",
            "version": "1.0.0",
            "approve_tool_changes": False,
        },
    }
    server = Server.objects.get(path="/newserver")
    assert server.registered_by == operator
    assert AuditEvent.objects.get().action == "server.create"


def test_register_answers_400_conflict_when_the_path_exists(client, member, weather):
    client.force_login(member("root", "mcp-registry-admin"))
    before = snapshot()

    response = client.post("/api/register", {**REGISTER_FORM, "path": "/weather"})

    assert response.status_code == 400
    assert response.json() == error_body(response, "A server is already registered at /weather.", "conflict")
    assert snapshot() == before
    assert Server.objects.get(path="/weather").name == "Weather"


def test_register_answers_400_with_the_invalid_fields(as_operator):
    form = {**REGISTER_FORM, "path": "/Bad Path", "proxy_pass_url": "ftp://x", "num_tools": "-1"}
    del form["name"]

    response = as_operator.post("/api/register", form)

    assert response.status_code == 400
    body = response.json()
    assert (body["detail"], body["error_code"]) == ("Invalid input.", "validation_error")
    assert sorted(body["errors"]) == ["name", "num_tools", "path", "proxy_pass_url"]
    assert body["errors"]["name"] == ["This field is required."]
    assert Server.objects.count() == 0


def test_register_answers_403_without_register_permission_even_for_bad_input(client, viewer):
    client.force_login(viewer)

    response = client.post("/api/register", {"path": "x"})

    assert response.status_code == 403
    assert response.json() == error_body(
        response, "You lack register_service permission.", "permission_denied"
    )
    assert Server.objects.count() == 0


def test_register_answers_403_for_a_path_outside_the_callers_grant(as_operator):
    response = as_operator.post("/register", {**REGISTER_FORM, "path": "elsewhere"})

    assert response.status_code == 403
    assert response.json() == error_body(
        response, "You lack register_service permission for /elsewhere.", "permission_denied"
    )
    assert Server.objects.count() == 0
    assert AuditEvent.objects.count() == 0


def test_register_enforces_csrf(operator):
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)

    response = client.post("/register", REGISTER_FORM)

    assert response.status_code == 403
    assert Server.objects.count() == 0


# -- GET /api/server_details/{path} ----------------------------------------------------------------


def test_details_show_everything_but_headers_with_the_tools(as_operator, weather):
    ToolFactory(server=weather, name="forecast", description="Forecast", input_schema={"type": "object"})

    response = as_operator.get("/api/server_details/weather")

    assert response.status_code == 200
    body = response.json()
    assert body.pop("created_at").endswith("Z")
    assert body.pop("updated_at").endswith("Z")
    assert body == {
        "path": "/weather",
        "name": "Weather",
        "description": "Forecasts by city",
        "proxy_pass_url": weather.proxy_pass_url,
        "tags": ["forecast", "Climate"],
        "num_tools": 2,
        "num_stars": 0,
        "is_python": False,
        "license": "N/A",
        "is_enabled": True,
        "health_status": "unknown",
        "health_detail": "",
        "last_checked_at": "2025-01-02T03:04:05Z",
        "supported_transports": [],
        "auth_type": "none",
        "auth_provider": "",
        "upstream_auth": "shared_headers",
        "user_secret_header": "",
        "version": "1.0.0",
        "approve_tool_changes": False,
        "tools": [{"name": "forecast", "description": "Forecast", "inputSchema": {"type": "object"}}],
    }
    assert "upstream-secret" not in response.content.decode()


def test_details_of_all_are_the_visible_servers(as_operator, weather, currenttime, secret):
    ToolFactory(server=weather, name="forecast")
    ToolFactory(server=currenttime, name="now")

    response = as_operator.get("/api/server_details/all")

    body = response.json()
    assert [(s["path"], [t["name"] for t in s["tools"]]) for s in body["servers"]] == [
        ("/currenttime", ["now"]),
        ("/weather", ["forecast"]),
    ]
    assert body["truncated"] is False
    assert "headers" not in body["servers"][0]


@pytest.mark.parametrize("path", ["nothing-here", "team/secret"])
def test_details_answer_404_for_unknown_and_invisible_servers(as_operator, secret, path):
    response = as_operator.get(f"/api/server_details/{path}")

    assert response.status_code == 404
    assert response.json() == error_body(response, f"No server is registered at /{path}.", "not_found")


# -- GET /api/tools/{path} -------------------------------------------------------------------------


def test_tools_of_one_server(as_operator, weather):
    ToolFactory(server=weather, name="forecast", description="Forecast", input_schema={"type": "object"})
    ToolFactory(server=weather, name="alerts", description="", input_schema={})

    response = as_operator.get("/api/tools/weather")

    assert response.status_code == 200
    assert response.json() == {
        "tools": [
            {"name": "alerts", "description": "", "inputSchema": {}},
            {"name": "forecast", "description": "Forecast", "inputSchema": {"type": "object"}},
        ]
    }


def test_tools_of_a_disabled_server_answer_400(as_operator, weather):
    Server.objects.filter(pk=weather.pk).update(is_enabled=False)

    response = as_operator.get("/api/tools/weather")

    assert response.status_code == 400
    assert response.json() == error_body(response, "Server /weather is disabled.", "bad_request")


@pytest.mark.parametrize("path", ["nothing-here", "team/secret"])
def test_tools_answer_404_for_unknown_and_invisible_servers(as_operator, secret, path):
    response = as_operator.get(f"/api/tools/{path}")

    assert response.status_code == 404
    assert response.json()["error_code"] == "not_found"


def test_tools_of_all_are_those_of_visible_enabled_servers(as_operator, weather, currenttime, secret):
    ToolFactory(server=weather, name="forecast", description="Forecast", input_schema={"type": "object"})
    ToolFactory(server=currenttime, name="now", description="Now", input_schema={})
    ToolFactory(server=secret, name="hidden")
    off = ServerFactory(path="/off", is_enabled=False)
    ToolFactory(server=off, name="asleep")

    response = as_operator.get("/api/tools/all")

    assert response.json() == {
        "tools": [
            {"name": "now", "description": "Now", "inputSchema": {}, "server_path": "/currenttime"},
            {
                "name": "forecast",
                "description": "Forecast",
                "inputSchema": {"type": "object"},
                "server_path": "/weather",
            },
        ],
        "truncated": False,
    }


# -- POST /api/refresh/{path} ----------------------------------------------------------------------


def test_refresh_queues_a_health_check_and_answers_the_current_status(
    as_operator, weather, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as queued:
        response = as_operator.post("/api/refresh/weather")

    assert response.status_code == 200
    assert response.json() == {
        "path": "/weather",
        "health_status": "unknown",
        "last_checked_iso": "2025-01-02T03:04:05Z",
        "num_tools": 2,
        "message": "Health check queued",
    }
    assert len(queued) == 1


def test_refresh_of_a_disabled_server_answers_400_and_queues_nothing(
    as_operator, weather, django_capture_on_commit_callbacks
):
    Server.objects.filter(pk=weather.pk).update(is_enabled=False)

    with django_capture_on_commit_callbacks() as queued:
        response = as_operator.post("/api/refresh/weather")

    assert response.status_code == 400
    assert response.json() == error_body(
        response, "Server /weather is disabled; enable it first.", "bad_request"
    )
    assert queued == []


@pytest.mark.parametrize(
    ("path", "status", "detail"),
    [
        ("currenttime", 403, "You lack health_check_service permission for /currenttime."),
        ("team/secret", 404, "No server is registered at /team/secret."),
        ("nothing-here", 404, "No server is registered at /nothing-here."),
    ],
)
def test_refresh_refusals_queue_nothing(
    as_operator, currenttime, secret, django_capture_on_commit_callbacks, path, status, detail
):
    with django_capture_on_commit_callbacks() as queued:
        response = as_operator.post(f"/api/refresh/{path}")

    assert response.status_code == status
    assert response.json()["detail"] == detail
    assert queued == []


def test_refresh_enforces_csrf(operator, weather, django_capture_on_commit_callbacks):
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)

    with django_capture_on_commit_callbacks() as queued:
        response = client.post("/api/refresh/weather")

    assert response.status_code == 403
    assert queued == []
