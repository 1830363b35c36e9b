"""A server's upstream authentication mode: one rule, the same messages on the internal API, the dashboard
and the console; servers registered with headers and no mode keep sending them (shared headers)."""

import base64

import pytest

from servers.models import Server
from tests.factories import ServerFactory

pytestmark = pytest.mark.django_db

PASSWORD = "s3cret-Password"
ADMIN = {"Authorization": "Basic " + base64.b64encode(f"ops:{PASSWORD}".encode()).decode()}
BASE = {"name": "Keyed", "description": "Needs a key", "proxy_pass_url": "http://127.0.0.1:8001/mcp"}


@pytest.fixture(autouse=True)
def internal_api(settings):
    settings.ADMIN_USER = "ops"
    settings.ADMIN_PASSWORD = PASSWORD


def register(client, **fields):
    return client.post("/api/internal/register", {**BASE, "path": "/keyed", **fields}, headers=ADMIN)


def test_each_users_secret_needs_a_header_with_the_placeholder_once(client):
    missing = register(client, upstream_auth="user_secret")
    twice = register(client, upstream_auth="user_secret", user_secret_header="X-Key: {secret}{secret}")
    hostile = register(client, upstream_auth="user_secret", user_secret_header="Host: {secret}")

    assert (missing.status_code, missing.json()["errors"]) == (
        400,
        {"user_secret_header": ['Write the header as "Name: value", e.g. "Authorization: Bearer {secret}".']},
    )
    assert twice.json()["errors"] == {
        "user_secret_header": ["The value must hold {secret} exactly once, where the user's secret goes."]
    }
    assert hostile.json()["errors"] == {
        "user_secret_header": ["The gateway sets Host itself; choose another header."]
    }
    assert Server.objects.count() == 0


def test_a_user_secret_server_is_registered_and_listed_with_its_mode(client):
    created = register(
        client, upstream_auth="user_secret", user_secret_header="Authorization: Bearer {secret}"
    )

    assert created.status_code == 201
    assert {key: created.json()["service"][key] for key in ("upstream_auth", "user_secret_header")} == {
        "upstream_auth": "user_secret",
        "user_secret_header": "Authorization: Bearer {secret}",
    }


def test_headers_without_a_mode_are_shared_headers_and_headers_with_another_mode_are_refused(client):
    shared = register(client, headers='{"X-Api-Key": "k"}')
    refused = client.post(
        "/api/internal/register",
        {
            **BASE,
            "path": "/other",
            "headers": '{"X-Api-Key": "k"}',
            "upstream_auth": "user_secret",
            "user_secret_header": "X-Key: {secret}",
        },
        headers=ADMIN,
    )
    empty = client.post(
        "/api/internal/register", {**BASE, "path": "/third", "upstream_auth": "shared_headers"}, headers=ADMIN
    )

    assert (shared.status_code, Server.objects.get(path="/keyed").upstream_auth) == (201, "shared_headers")
    assert refused.json()["errors"] == {
        "headers": ["Outbound headers are sent only in the shared headers mode."]
    }
    assert empty.json()["errors"] == {"headers": ["Shared headers need at least one outbound header."]}


def test_the_dashboard_form_gives_the_same_messages(admin_client):
    refused = admin_client.post(
        "/api/register",
        {**BASE, "path": "/keyed", "upstream_auth": "user_secret", "user_secret_header": "nope"},
    )
    accepted = admin_client.post(
        "/api/register",
        {
            **BASE,
            "path": "/keyed",
            "upstream_auth": "user_secret",
            "user_secret_header": "X-API-Key: {secret}",
        },
    )

    assert refused.json()["errors"] == {
        "user_secret_header": ['Write the header as "Name: value", e.g. "Authorization: Bearer {secret}".']
    }
    assert accepted.status_code == 201
    assert Server.objects.get(path="/keyed").user_secret_header == "X-API-Key: {secret}"


def test_a_non_administrator_cannot_choose_the_mode(client, member, scope_factory):
    scope_factory("registrars", group="registrars", ui={"register_service": ["all"]})
    client.force_login(member("rita", "registrars"))

    response = client.post("/api/register", {**BASE, "path": "/keyed", "upstream_auth": "user_secret"})

    assert response.status_code == 400
    assert response.json()["errors"]["upstream_auth"] == [
        "Only administrators choose where the server's credentials come from."
    ]
    assert Server.objects.count() == 0


def test_moving_a_shared_headers_server_to_another_origin_drops_its_headers_and_mode(admin_client):
    server = ServerFactory(path="/moved", headers={"X-Api-Key": "k"}, upstream_auth="shared_headers")

    admin_client.post("/api/edit/moved", {"name": "Moved", "proxy_pass_url": "http://127.0.0.2:9/mcp"})

    server.refresh_from_db()
    assert (server.headers, server.upstream_auth) == ({}, "none")


def test_cross_app_access_needs_the_kept_logins_and_https(client, settings):
    off = register(client, upstream_auth="cross_app_access", proxy_pass_url="https://mcp.example.com/mcp")
    settings.CROSS_APP_ACCESS_ENABLED = True
    plain = register(client, upstream_auth="cross_app_access", proxy_pass_url="http://mcp.example.com/mcp")
    created = register(client, upstream_auth="cross_app_access", proxy_pass_url="https://mcp.example.com/mcp")

    assert (off.status_code, off.json()["errors"]) == (
        400,
        {
            "upstream_auth": [
                "Cross-app access needs CROSS_APP_ACCESS_ENABLED, so that users' identity-provider logins "
                "are kept for the exchange."
            ]
        },
    )
    assert plain.json()["errors"] == {
        "proxy_pass_url": ["A target users sign in to must be reached over https."]
    }
    assert (created.status_code, created.json()["service"]["upstream_auth"]) == (201, "cross_app_access")
