"""The internal API takes HTTP Basic against ADMIN_USER / ADMIN_PASSWORD and nothing else."""

import base64

import pytest

from tests.factories import ServerFactory

pytestmark = pytest.mark.django_db


def basic(username, password):
    return {"Authorization": "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()}


@pytest.fixture(autouse=True)
def credentials(settings):
    settings.ADMIN_USER = "ops"
    settings.ADMIN_PASSWORD = "s3cret-Password"


def test_the_right_credentials_list_every_server_without_headers(client):
    ServerFactory(path="/weather", headers={"Authorization": "Bearer upstream-credential"})

    response = client.get("/api/internal/list", headers=basic("ops", "s3cret-Password"))

    assert response.status_code == 200
    (service,) = response.json()["services"]
    assert service["path"] == "/weather"
    assert "headers" not in service
    assert "upstream-credential" not in response.content.decode()


@pytest.mark.parametrize(
    "headers",
    [
        {},
        basic("ops", "wrong"),
        basic("someone", "s3cret-Password"),
        basic("ops", ""),
        {"Authorization": "Basic !!!not-base64"},
        {"X-User": "ops", "X-Scopes": "mcp-registry-admin"},
    ],
)
def test_missing_and_wrong_credentials_are_401_with_a_basic_challenge(client, headers):
    response = client.get("/api/internal/list", headers=headers)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Basic realm="mcp-gateway-registry internal"'
    assert set(response.json()) == {"detail", "error_code", "request_id"}


def test_a_bearer_token_or_a_session_is_not_enough(client, member):
    client.force_login(member("root", is_superuser=True))

    response = client.get("/api/internal/list")

    assert response.status_code == 401


def test_without_a_configured_password_the_internal_api_is_503(client, settings):
    settings.ADMIN_PASSWORD = ""

    response = client.get("/api/internal/list", headers=basic("ops", ""))

    assert response.status_code == 503
    assert response.json()["error_code"] == "internal_api_disabled"
    assert response.json()["detail"] == "The internal API is disabled: set ADMIN_PASSWORD to enable it."


def test_basic_credentials_open_nothing_else(client):
    response = client.get("/api/auth/me", headers=basic("ops", "s3cret-Password"))

    assert response.status_code == 401
