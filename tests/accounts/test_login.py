"""Form login and logout, prefixed and unprefixed, with CSRF, session cookie rules and failure limits."""

from urllib.parse import urlencode

import pytest
from django.test import Client

from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice():
    return UserFactory(username="alice", email="alice@example.test")


def test_the_login_page_is_a_form_with_csrf(client):
    response = client.get("/api/auth/login")

    assert response.status_code == 200
    html = response.content.decode()
    assert 'name="csrfmiddlewaretoken"' in html
    assert 'name="username"' in html
    assert 'name="password"' in html


def test_a_good_login_redirects_home_with_a_session_cookie(client, alice):
    response = client.post("/api/auth/login", {"username": "alice", "password": PASSWORD})

    assert response.status_code == 302
    assert response["Location"] == "/"
    cookie = response.cookies["sessionid"]
    assert cookie["httponly"] is True
    assert cookie["samesite"] == "Lax"
    assert cookie["max-age"] == 8 * 3600
    me = client.get("/api/auth/me").json()
    assert me == {
        "username": "alice",
        "email": "alice@example.test",
        "auth_method": "session",
        "provider": None,
        "scopes": [],
        "groups": [],
        "is_admin": False,
    }


@pytest.mark.parametrize(("username", "password"), [("alice", "wrong"), ("nobody", PASSWORD), ("", "")])
def test_a_bad_login_answers_401_and_never_says_which_part_was_wrong(client, alice, username, password):
    response = client.post("/api/auth/login", {"username": username, "password": password})

    assert response.status_code == 401
    assert "Invalid username or password." in response.content.decode()
    assert "sessionid" not in response.cookies
    assert client.get("/api/auth/me").status_code == 401


def test_the_unprefixed_form_redirects_to_login_with_the_error(client, alice):
    bad = client.post("/login", {"username": "alice", "password": "wrong"})
    good = client.post("/login", {"username": "alice", "password": PASSWORD})

    assert bad.status_code == 302
    assert bad["Location"] == "/login?error=Invalid+username+or+password.&username=alice"
    assert good.status_code == 302
    assert good["Location"] == "/"


def test_a_login_post_without_the_csrf_token_is_refused(alice):
    client = Client(enforce_csrf_checks=True)

    response = client.post("/api/auth/login", {"username": "alice", "password": PASSWORD})

    assert response.status_code == 403
    assert "sessionid" not in response.cookies


def test_failures_are_limited_per_user_even_for_the_right_password_afterwards(client, alice, settings):
    settings.LOGIN_FAILURES_PER_USER = 3
    for _ in range(3):
        assert client.post("/api/auth/login", {"username": "alice", "password": "wrong"}).status_code == 401

    locked = client.post("/api/auth/login", {"username": "alice", "password": PASSWORD})

    assert locked.status_code == 429
    assert int(locked["Retry-After"]) >= 1
    assert "Too many failed login attempts" in locked.content.decode()
    assert "sessionid" not in locked.cookies


def test_failures_are_limited_per_address_across_usernames(client, settings):
    settings.LOGIN_FAILURES_PER_ADDRESS = 4
    UserFactory(username="zed")
    for n in range(4):
        client.post("/api/auth/login", {"username": f"guess{n}", "password": "x"})

    response = client.post("/api/auth/login", {"username": "zed", "password": PASSWORD})

    assert response.status_code == 429


def test_service_accounts_cannot_log_in_with_a_form(client):
    UserFactory(username="robot", is_service_account=True)

    response = client.post("/api/auth/login", {"username": "robot", "password": PASSWORD})

    assert response.status_code == 401


@pytest.mark.parametrize(
    ("method", "path"), [("get", "/api/auth/logout"), ("post", "/api/auth/logout"), ("post", "/logout")]
)
def test_logout_clears_the_session_and_goes_to_login(client, alice, method, path):
    client.force_login(alice)

    response = getattr(client, method)(path)

    assert response.status_code == 302
    assert response["Location"] == "/login"
    assert client.get("/api/auth/me").status_code == 401
    assert '<li class="flash-success">You have logged out.</li>' in client.get("/login").content.decode()


def test_get_logout_asks_with_a_button_that_posts(client, alice):
    client.force_login(alice)

    page = client.get("/logout")

    assert page.status_code == 200
    assert '<form method="post" action="/logout">' in page.content.decode()
    assert client.get("/api/auth/me").status_code == 200  # a GET logs nobody out
    assert client.get("/logout").status_code == 200
    client.logout()
    assert client.get("/logout")["Location"] == "/login"


def test_me_without_a_session_is_401_in_the_error_format(client):
    response = client.get("/api/auth/me")

    assert response.status_code == 401
    body = response.json()
    assert set(body) == {"detail", "error_code", "request_id"}
    assert body["error_code"] == "not_authenticated"
    assert response["WWW-Authenticate"] == 'Bearer realm="mcp-gateway-registry"'


def test_providers_lists_only_configured_ones(client, settings):
    settings.SOCIALACCOUNT_PROVIDERS = {}
    empty = client.get("/api/auth/providers").json()
    settings.SOCIALACCOUNT_PROVIDERS = {
        "openid_connect": {
            "APPS": [
                {
                    "provider_id": "keycloak",
                    "name": "Keycloak",
                    "client_id": "registry",
                    "secret": "s",
                    "settings": {"server_url": "http://127.0.0.1:1/realms/x"},
                }
            ]
        }
    }

    configured = client.get("/api/auth/providers").json()

    assert empty == {"providers": []}
    assert configured == {"providers": [{"name": "keycloak", "display_name": "Keycloak", "icon": "keycloak"}]}


def test_an_unknown_provider_is_404(client, settings):
    settings.SOCIALACCOUNT_PROVIDERS = {}

    response = client.get("/api/auth/auth/nope")

    assert response.status_code == 404
    assert response.json()["error_code"] == "not_found"


@pytest.mark.parametrize(
    ("error", "message"),
    [
        ("access_denied", "The identity provider did not allow the login (it was refused or cancelled)."),
        ("Your account is locked, call +1 555", "Login with the identity provider failed."),
        ("", "Login with the identity provider failed."),
    ],
)
def test_the_callback_with_an_error_goes_back_to_login_with_a_message_of_the_registry(client, error, message):
    response = client.get("/api/auth/auth/callback", {"error": error, "details": "call +1 555 0100"})

    assert response.status_code == 302
    assert response["Location"] == f"/login?{urlencode({'error': message})}"
    assert message in client.get(response["Location"]).content.decode()


@pytest.mark.parametrize("url", ["/login", "/api/auth/login"])
def test_the_login_page_shows_no_text_a_link_brings(client, url):
    forged = client.get(url, {"error": "Your account is locked, call +1 555 0100"}).content.decode()
    ours = client.get(url, {"error": "Invalid username or password."}).content.decode()

    assert "call +1 555" not in forged
    assert '<p class="error" role="alert">Login failed. Try again.</p>' in forged
    assert '<p class="error" role="alert">Invalid username or password.</p>' in ours
