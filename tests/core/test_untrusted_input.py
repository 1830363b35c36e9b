"""The one input rule on every surface: text PostgreSQL cannot store and over-deep JSON are refused with
a 4xx in the surface's own format, naming the field, and nothing is written; other hostile input seen
answering 500 (unusual offsets, broken URLs, NUL credentials, allauth's own pages) is refused cleanly."""

import base64
import json

import pytest

from accounts.models import User
from agents.models import Agent
from servers.models import Server
from tests.factories import ServerFactory, UserFactory

pytestmark = pytest.mark.django_db

ADMIN_PASSWORD = "internal secret for tests"
NUL = "\x00"
SURROGATE = "\ud800"


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def raw_json(value) -> str:
    """JSON text that keeps a lone surrogate as the `\\ud800` escape (what a hostile client sends)."""
    return json.dumps(value, ensure_ascii=True)


@pytest.fixture
def admin(member):
    return member("root", "mcp-registry-admin")


@pytest.fixture
def bearer(admin, token_for):
    return {"HTTP_AUTHORIZATION": f"Bearer {token_for(admin)}"}


@pytest.fixture
def internal(settings):
    settings.ADMIN_USER = "ops"
    settings.ADMIN_PASSWORD = ADMIN_PASSWORD
    credentials = base64.b64encode(f"ops:{ADMIN_PASSWORD}".encode()).decode()
    return {"HTTP_AUTHORIZATION": f"Basic {credentials}"}


# -- query parameters and path segments ------------------------------------------------------------


@pytest.mark.parametrize("query", ["search=%00", "version=a%00b", "updated_since=%00"])
def test_nul_in_a_v01_query_parameter_is_400_in_the_v01_format(client, bearer, query):
    response = client.get(f"/v0.1/servers?{query}", **bearer)

    assert response.status_code == 400
    name = query.split("=")[0]
    assert response.json() == {
        "error": {"code": "INVALID_PARAMETER", "message": f"{name}: NUL characters are not allowed."}
    }


def test_nul_in_the_dashboard_query_is_a_400_page(client, admin):
    client.force_login(admin)

    response = client.get("/?query=%00")

    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")
    assert b"query: NUL characters are not allowed." in response.content


@pytest.mark.parametrize(
    "url",
    [
        "/api/agents/%00",
        "/api/agents/%00/toggle",
        "/api/tools/%00",
        "/api/server_details/%00",
        "/api/toggle/%00",
        "/api/refresh/%00",
        "/api/edit/%00",
        "/v0.1/servers/io.mcpgateway%2F%00/versions",
    ],
)
def test_nul_in_a_path_segment_is_400(client, bearer, url):
    response = (
        client.post(url, **bearer) if "toggle" in url or "refresh" in url else client.get(url, **bearer)
    )

    assert response.status_code == 400
    body = response.json()
    if url.startswith("/v0.1"):
        assert body["error"]["message"] == "path: NUL characters are not allowed."
    else:
        assert body["error_code"] == "validation_error"
        assert body["errors"] == {"path": ["NUL characters are not allowed."]}


def test_an_updated_since_offset_postgresql_cannot_hold_is_read_as_the_same_instant(client, bearer):
    ServerFactory(path="/weather")

    response = client.get("/v0.1/servers", {"updated_since": "2000-01-01T00:00:00+16:00"}, **bearer)

    assert response.status_code == 200
    assert [s["server"]["name"] for s in response.json()["servers"]] == ["io.mcpgateway/weather"]


def test_an_updated_since_out_of_range_is_400(client, bearer):
    response = client.get("/v0.1/servers", {"updated_since": "0001-01-01T00:00:00+15:00"}, **bearer)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "INVALID_PARAMETER"


# -- JSON bodies ----------------------------------------------------------------------------------------

CARD = {
    "name": "Summarizer",
    "description": "Summarizes",
    "path": "/summarizer",
    "url": "https://agents.example.test/summarizer",
    "version": "1.0.0",
    "skills": [{"name": "summarize", "description": "Summarize", "input_schema": {"type": "object"}}],
}


@pytest.mark.parametrize(
    ("card", "field"),
    [
        ({**CARD, "skills": [{"name": f"sum{NUL}", "description": "d"}]}, "skills[0].name"),
        ({**CARD, "tags": ["a", f"b{SURROGATE}"]}, "tags[1]"),
        ({**CARD, "skills": [{"name": "s", "input_schema": {"x": NUL}}]}, "skills[0].input_schema.x"),
        (
            {**CARD, "security_schemes": {f"k{SURROGATE}": {"type": "bearer"}}},
            "security_schemes.k\\ud800",
        ),
    ],
)
def test_unstorable_text_in_an_agent_card_is_400_naming_the_field(client, bearer, card, field):
    response = client.post("/api/agents/register", raw_json(card), content_type="application/json", **bearer)

    assert response.status_code == 400
    body = response.json()
    assert body["error_code"] == "validation_error"
    assert list(body["errors"]) == [field]
    assert Agent.objects.count() == 0


def test_unstorable_text_in_an_agent_replacement_is_400_and_changes_nothing(client, bearer, admin):
    created = client.post("/api/agents/register", json.dumps(CARD), content_type="application/json", **bearer)
    assert created.status_code == 201

    response = client.put(
        "/api/agents/summarizer",
        raw_json({**CARD, "description": f"x{NUL}"}),
        content_type="application/json",
        **bearer,
    )

    assert response.status_code == 400
    assert response.json()["errors"] == {"description": ["NUL characters are not allowed."]}
    assert Agent.objects.get().description == "Summarizes"


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"headers": {"X-Key": f"v{NUL}"}}, "headers.X-Key"),
        ({"tags": [f"t{SURROGATE}"]}, "tags[0]"),
        ({"tool_list": [{"name": "t", "description": f"d{NUL}"}]}, "tool_list[0].description"),
        ({"tool_list": [{"name": "t", "inputSchema": {"a": SURROGATE}}]}, "tool_list[0].inputSchema.a"),
    ],
)
def test_unstorable_text_in_an_internal_register_is_400_naming_the_field(client, internal, extra, field):
    body = {"path": "/weather", "name": "Weather", "proxy_pass_url": "http://127.0.0.1:9/mcp", **extra}

    response = client.post(
        "/api/internal/register", raw_json(body), content_type="application/json", **internal
    )

    assert response.status_code == 400
    assert list(response.json()["errors"]) == [field]
    assert Server.objects.count() == 0


@pytest.mark.parametrize(
    ("method", "url", "auth"),
    [
        ("post", "/api/agents/register", "bearer"),
        ("put", "/api/agents/summarizer", "bearer"),
        ("post", "/api/tokens/generate", "bearer"),
        ("post", "/api/internal/register", "internal"),
        ("post", "/api/search/semantic", "bearer"),
    ],
)
def test_json_nested_thousands_deep_is_400(client, request, method, url, auth):
    headers = request.getfixturevalue(auth)
    if method == "put":
        created = client.post(
            "/api/agents/register", json.dumps(CARD), content_type="application/json", **headers
        )
        assert created.status_code == 201

    response = getattr(client, method)(url, deep(5000), content_type="application/json", **headers)

    assert response.status_code == 400
    assert response.json()["error_code"] == "validation_error"
    assert response.json()["errors"] == {"body": ["JSON is nested deeper than 64 levels."]}


def test_json_just_within_the_depth_limit_is_read(client, bearer, settings):
    schema = {"type": "object"}
    for _ in range(settings.JSON_MAX_DEPTH - 5):  # card, skills, skill, input_schema: 4 levels above it
        schema = {"x": schema}
    card = {**CARD, "skills": [{"name": "s", "description": "d", "input_schema": schema}]}

    response = client.post(
        "/api/agents/register", json.dumps(card), content_type="application/json", **bearer
    )

    assert response.status_code == 201, response.content


def test_a_deep_x_body_on_validate_is_400(client, bearer):
    response = client.get(
        "/validate", HTTP_X_ORIGINAL_URL="http://gw/weather/mcp", HTTP_X_BODY=deep(5000), **bearer
    )

    assert response.status_code == 400
    assert response.json()["detail"] == "The body is refused: body: JSON is nested deeper than 64 levels."


# -- credentials and headers ----------------------------------------------------------------------------


def test_an_unparsable_x_original_url_is_400(client, bearer):
    response = client.get("/validate", HTTP_X_ORIGINAL_URL="http://[::1/alpha", **bearer)

    assert response.status_code == 400
    assert response.json()["detail"] == "X-Original-URL is not a usable MCP endpoint URL."


def test_a_nul_server_in_x_original_url_is_400(client, bearer):
    response = client.get("/validate", HTTP_X_ORIGINAL_URL="http://gw/%00/mcp", **bearer)

    assert response.status_code == 400


@pytest.mark.parametrize("pair", ["\x00:\x00", "a\x00b:secret", "client:\ud800"])
def test_unstorable_basic_credentials_are_401_invalid_client(client, pair):
    encoded = base64.b64encode(pair.encode("utf-8", "surrogatepass")).decode()

    response = client.post(
        "/api/auth/token", {"grant_type": "client_credentials"}, HTTP_AUTHORIZATION=f"Basic {encoded}"
    )

    assert response.status_code == 401
    assert response.json()["error_code"] == "invalid_client"


def test_unstorable_basic_credentials_on_the_internal_api_are_401(client, internal):
    encoded = base64.b64encode(b"\x00:\x00").decode()

    response = client.get("/api/internal/list", HTTP_AUTHORIZATION=f"Basic {encoded}")

    assert response.status_code == 401
    assert response.json()["detail"] == "Malformed Basic credentials."


# -- forms -------------------------------------------------------------------------------------------


def test_nul_in_the_login_form_is_a_400_page(client):
    UserFactory(username="ann")

    response = client.post("/login", {"username": f"ann{NUL}", "password": "x"})

    assert response.status_code == 400
    assert b"username: NUL characters are not allowed." in response.content


def test_nul_in_the_edit_form_is_400_and_changes_nothing(client, admin):
    ServerFactory(path="/weather", description="kept")
    client.force_login(admin)

    response = client.post("/api/edit/weather", {"name": "W", "description": f"d{NUL}"})

    assert response.status_code == 400
    assert Server.objects.get().description == "kept"


# -- only what the product uses of allauth ---------------------------------------------------------------


@pytest.mark.parametrize(
    "url", ["/accounts/signup/", "/accounts/password/reset/", "/accounts/email/", "/accounts/3rdparty/"]
)
def test_allauth_pages_the_product_does_not_use_are_not_served(client, url):
    response = client.get(url)

    assert response.status_code == 404


def test_nobody_can_sign_up_through_allauth(client):
    response = client.post(
        "/accounts/signup/",
        {
            "username": "mallory",
            "email": "m@example.test",
            "password1": "Xy9!long-pass",
            "password2": "Xy9!long-pass",
        },
    )

    assert response.status_code == 404
    assert not User.objects.filter(username="mallory").exists()
