"""Identity-provider login and identity-provider tokens, end to end against a real OpenID provider
(oidc-provider from npm) on loopback; nothing in allauth is patched."""

import pytest
import requests
from django.contrib.auth.models import Group
from django.urls import reverse

from accounts.models import IdpGroupMapping, User
from tests.conftest import unused_port
from tests.oidc.harness import client_credentials_token, drive_login, start_provider

CLIENT_ID = "registry"
CLIENT_SECRET = "registry-secret-for-tests"
PASSWORD = "op-password"
AUDIENCE = "urn:mcp-registry"


@pytest.fixture
def mapped_groups(transactional_db, scope_factory):
    developers = Group.objects.create(name="developers")
    IdpGroupMapping.objects.create(idp_group="idp-devs", group=developers)
    legacy = Group.objects.create(name="legacy")
    IdpGroupMapping.objects.create(idp_group="gone-from-idp", group=legacy)
    scope_factory("dev-scope", group="developers", ui={"list_service": ["all"]})


@pytest.fixture
def provider(live_server, settings, mapped_groups):
    callback = live_server.url + reverse("openid_connect_callback", kwargs={"provider_id": "oidc"})
    accounts = {
        "alice": {
            "preferred_username": "alice",
            "email": "alice@example.test",
            "groups": ["idp-devs", "not-mapped-anywhere"],
        }
    }
    with start_provider(
        port=unused_port(),
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        redirect_uri=callback,
        accounts=accounts,
        password=PASSWORD,
        cc_groups=["idp-devs"],
    ) as op:
        settings.SOCIALACCOUNT_PROVIDERS = {
            "openid_connect": {
                "APPS": [
                    {
                        "provider_id": "oidc",
                        "name": "Test SSO",
                        "client_id": CLIENT_ID,
                        "secret": CLIENT_SECRET,
                        "settings": {"server_url": op.issuer},
                    }
                ],
                "SCOPE": ["openid", "profile", "email"],
                "OAUTH_PKCE_ENABLED": True,
            }
        }
        settings.OIDC_TOKEN_ISSUER = op.issuer
        settings.OIDC_TOKEN_AUDIENCE = AUDIENCE
        yield op


def sso_login(live_server, password=PASSWORD) -> requests.Session:
    session = requests.Session()
    start = session.get(live_server.url + "/api/auth/auth/oidc", timeout=15)
    drive_login(session, start, login="alice", password=password)
    return session


def test_the_provider_is_listed(live_server, provider):
    providers = requests.get(live_server.url + "/api/auth/providers", timeout=10).json()

    assert providers == {"providers": [{"name": "oidc", "display_name": "Test SSO", "icon": "openid"}]}


def test_login_through_the_provider_maps_its_groups(live_server, provider):
    session = sso_login(live_server)

    me = session.get(live_server.url + "/api/auth/me", timeout=10)

    assert me.status_code == 200
    assert me.json() == {
        "username": "alice",
        "email": "alice@example.test",
        "auth_method": "oauth",
        "provider": "oidc",
        "scopes": ["dev-scope"],
        "groups": ["developers"],
        "is_admin": False,
    }


def test_the_flow_passes_through_the_callback_and_ends_home(live_server, provider):
    session = requests.Session()
    start = session.get(live_server.url + "/api/auth/auth/oidc", allow_redirects=False, timeout=10)

    final = drive_login(session, start, login="alice", password=PASSWORD)

    visited = [r.url.replace(live_server.url, "") for r in final.history] + [
        final.url.replace(live_server.url, "")
    ]
    assert start.status_code == 302
    assert start.headers["Location"].startswith(provider.issuer + "/auth?")
    assert visited[-3].startswith("/accounts/oidc/oidc/login/callback/?code=")
    assert visited[-2:] == ["/api/auth/auth/callback", "/"]


def test_the_page_asked_for_before_the_login_is_reached_after_it(live_server, provider):
    """An MCP host's authorization request survives an identity-provider login (docs/auth.md)."""
    session = requests.Session()
    wanted = "/oauth/authorize?client_id=x&response_type=code"
    page = session.get(live_server.url + "/login", params={"next": wanted}, timeout=10)
    link = "/api/auth/auth/oidc?next=/oauth/authorize%3Fclient_id%3Dx%26response_type%3Dcode"
    assert f'href="{link}"' in page.text.replace("&amp;", "&")
    start = session.get(live_server.url + link, allow_redirects=False, timeout=10)

    final = drive_login(session, start, login="alice", password=PASSWORD)

    visited = [r.url.replace(live_server.url, "") for r in final.history] + [
        final.url.replace(live_server.url, "")
    ]
    assert visited[-2:] == ["/api/auth/auth/callback", wanted]


def test_a_destination_on_another_site_is_not_followed_after_a_provider_login(live_server, provider):
    session = requests.Session()
    start = session.get(live_server.url + "/api/auth/auth/oidc?next=https://evil.example/", timeout=10)

    final = drive_login(session, start, login="alice", password=PASSWORD)

    assert final.url == live_server.url + "/"


def test_a_wrong_password_at_the_provider_logs_nobody_in(live_server, provider):
    session = requests.Session()
    start = session.get(live_server.url + "/api/auth/auth/oidc", timeout=10)

    page = drive_login(session, start, login="alice", password="wrong")

    assert page.status_code == 401
    assert session.get(live_server.url + "/api/auth/me", timeout=10).status_code == 401
    assert not User.objects.filter(username="alice").exists()


def test_each_login_resyncs_mapped_groups_and_keeps_local_ones(live_server, provider):
    sso_login(live_server)
    alice = User.objects.get(username="alice")
    alice.groups.add(Group.objects.get(name="legacy"), Group.objects.create(name="local-only"))

    sso_login(live_server)

    assert sorted(alice.groups.values_list("name", flat=True)) == ["developers", "local-only"]


def test_an_identity_provider_token_is_accepted_with_its_groups(live_server, provider):
    raw = client_credentials_token(
        provider, client_id=CLIENT_ID, client_secret=CLIENT_SECRET, resource=AUDIENCE
    )

    me = requests.get(
        live_server.url + "/api/auth/me", headers={"Authorization": f"Bearer {raw}"}, timeout=10
    )

    assert me.status_code == 200
    assert me.json()["auth_method"] == "oidc"
    assert me.json()["groups"] == ["developers"]
    assert me.json()["scopes"] == ["dev-scope"]
    assert me.json()["username"] == CLIENT_ID


def test_an_identity_provider_token_for_another_audience_is_refused(live_server, provider):
    raw = client_credentials_token(
        provider, client_id=CLIENT_ID, client_secret=CLIENT_SECRET, resource="urn:other"
    )

    me = requests.get(
        live_server.url + "/api/auth/me", headers={"Authorization": f"Bearer {raw}"}, timeout=10
    )

    assert me.status_code == 401
    assert me.json()["error_code"] == "token_invalid"
