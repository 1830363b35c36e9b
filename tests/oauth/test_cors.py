"""Browser and IDE clients: CORS for the origins of CORS_ALLOWED_ORIGINS on /v0.1, /v0, the OAuth
endpoints and the gateway (one rule, django-cors-headers' settings), metadata documents for any origin,
preflights answered without credentials; and the public listing switch."""

import pytest

from tests.factories import ServerFactory
from tests.gateway.gateway_calls import INITIALIZE, bearer, caller_fixture, gateway_fixture, post  # noqa: F401
from tests.mcp_servers import time_server_fixture  # noqa: F401

VSCODE = "https://vscode.dev"
PREFLIGHT = {
    "HTTP_ORIGIN": VSCODE,
    "HTTP_ACCESS_CONTROL_REQUEST_METHOD": "GET",
    "HTTP_ACCESS_CONTROL_REQUEST_HEADERS": "authorization",
}


@pytest.fixture
def vscode_allowed(settings):
    settings.CORS_ALLOWED_ORIGINS = [VSCODE]


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/v0.1/servers", "/v0/servers", "/oauth/token", "/oauth/register"])
def test_a_preflight_of_an_allowed_origin_is_answered_without_credentials(client, vscode_allowed, path):
    response = client.options(path, **PREFLIGHT)

    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == VSCODE
    assert "authorization" in response["Access-Control-Allow-Headers"]
    assert "Access-Control-Allow-Credentials" not in response


@pytest.mark.django_db
def test_answers_to_an_allowed_origin_can_be_read_by_its_pages(client, vscode_allowed):
    response = client.get("/v0.1/servers", HTTP_ORIGIN=VSCODE)

    assert response.status_code == 401
    assert response["Access-Control-Allow-Origin"] == VSCODE
    assert response["Cross-Origin-Resource-Policy"] == "cross-origin"
    assert "WWW-Authenticate" in response["Access-Control-Expose-Headers"]


@pytest.mark.django_db
def test_an_origin_not_listed_gets_no_cors_headers(client):
    preflight = client.options("/v0.1/servers", **PREFLIGHT)
    answer = client.get("/v0.1/servers", HTTP_ORIGIN=VSCODE)

    assert "Access-Control-Allow-Origin" not in preflight
    assert "Access-Control-Allow-Origin" not in answer
    assert answer["Cross-Origin-Resource-Policy"] == "same-origin"


@pytest.mark.django_db
def test_metadata_documents_answer_every_origin(client):
    for path in ("/.well-known/oauth-authorization-server", "/.well-known/oauth-protected-resource/a/mcp"):
        response = client.get(path, HTTP_ORIGIN="https://anything.example")

        assert response["Access-Control-Allow-Origin"] == "*"


@pytest.mark.django_db(transaction=True)
def test_the_gateway_follows_the_same_rule(gateway, caller, time_server, vscode_allowed):
    import http.client

    ServerFactory(path="/clock", proxy_pass_url=time_server)
    token = caller({"server": "/clock", "methods": ["*"], "tools": ["*"]})
    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=10)
    connection.request(
        "OPTIONS",
        "/clock/mcp",
        headers={
            "Origin": VSCODE,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": (
                "authorization, content-type, mcp-protocol-version, mcp-param-city, x-evil"
            ),
        },
    )
    preflight = connection.getresponse()
    preflight.read()

    answered, headers, _ = post(gateway.port, "/clock/mcp", INITIALIZE, bearer(token, Origin=VSCODE))
    refused, refused_headers, _ = post(gateway.port, "/clock/mcp", INITIALIZE, {"Origin": VSCODE})
    headers = {k.lower(): v for k, v in headers.items()}

    assert preflight.status == 204
    assert preflight.getheader("Access-Control-Allow-Origin") == VSCODE
    assert preflight.getheader("Access-Control-Allow-Methods") == "GET, POST, DELETE"
    assert preflight.getheader("Access-Control-Allow-Headers") == (
        "authorization, content-type, mcp-protocol-version, mcp-param-city"
    )
    assert (answered, headers["access-control-allow-origin"]) == (200, VSCODE)
    assert "Mcp-Session-Id" in headers["access-control-expose-headers"]
    assert refused == 401
    assert {k.lower(): v for k, v in refused_headers.items()}["access-control-allow-origin"] == VSCODE


@pytest.mark.django_db
def test_public_listing_is_off_by_default(client, scope_factory):
    ServerFactory(path="/weather")
    scope_factory("public-weather", group="mcp-registry-public", ui={"list_service": ["weather"]})

    assert client.get("/v0.1/servers").status_code == 401


@pytest.mark.django_db
def test_public_listing_shows_anonymous_callers_what_the_public_grant_lists(client, scope_factory, settings):
    settings.PUBLIC_LISTING = True
    ServerFactory(path="/weather")
    ServerFactory(path="/payroll")
    scope_factory("public-weather", group="mcp-registry-public", ui={"list_service": ["weather"]})

    listed = client.get("/v0.1/servers", HTTP_ORIGIN=VSCODE)
    bad_token = client.get("/v0.1/servers", HTTP_AUTHORIZATION="Bearer nonsense")
    elsewhere = client.get("/api/servers")

    assert listed.status_code == 200
    assert [entry["server"]["name"].split("/")[-1] for entry in listed.json()["servers"]] == ["weather"]
    assert bad_token.status_code == 401
    assert elsewhere.status_code == 401
