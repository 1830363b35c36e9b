"""One rule for a client's metadata, however it arrives (oauth/clients.py): a registration, its RFC 7592
update and a Client ID Metadata Document. Redirect URIs are judged as they are stored (space-separated),
so whitespace or a control character in one is refused rather than split into a second URI; grant types
are authorization_code and refresh_token only; lists and text fields are bounded."""

import pytest
import requests
from oauth2_provider.models import Application

from tests.oauth.flow import REDIRECT_URI

pytestmark = pytest.mark.django_db(transaction=True)

SMUGGLED = [
    f"{REDIRECT_URI} http://evil.example/cb",
    f"{REDIRECT_URI}\thttp://evil.example/cb",
    f"{REDIRECT_URI}\nhttp://evil.example/cb",
    f"{REDIRECT_URI}\r\nhttp://evil.example/cb",
    f"{REDIRECT_URI}\x0bhttp://evil.example/cb",
    f"{REDIRECT_URI}\u00a0http://evil.example/cb",
    f"{REDIRECT_URI}\u2028http://evil.example/cb",
    f"{REDIRECT_URI}\x85x",
    " " + REDIRECT_URI,
]


@pytest.mark.parametrize("uri", SMUGGLED, ids=range(len(SMUGGLED)))
def test_a_redirect_uri_holding_whitespace_or_a_control_character_is_refused(host, uri):
    answer = host.register(redirect_uris=[uri])

    assert (answer.status_code, answer.json()["error"]) == (400, "invalid_redirect_uri")
    assert Application.objects.count() == 0


@pytest.mark.parametrize(
    "uri",
    [
        "http://evil.example/cb",
        "javascript:alert(1)",
        "data:text/html,x",
        "https://app.example/cb#frag",
        "//x",
    ],
)
def test_redirect_uris_outside_the_rule_are_refused(host, uri):
    answer = host.register(redirect_uris=[REDIRECT_URI, uri])

    assert (answer.status_code, answer.json()["error"]) == (400, "invalid_redirect_uri")
    assert Application.objects.count() == 0


@pytest.mark.parametrize(
    "grant_types",
    [
        ["password"],
        ["client_credentials"],
        ["implicit"],
        ["urn:ietf:params:oauth:grant-type:device_code"],
        ["authorization_code", "client_credentials"],
        "authorization_code",
        [7],
    ],
)
def test_only_the_authorization_code_and_refresh_grants_may_be_registered(host, grant_types):
    answer = host.register(grant_types=grant_types)

    assert (answer.status_code, answer.json()["error"]) == (400, "invalid_client_metadata")
    assert Application.objects.count() == 0


def test_the_usual_registration_of_an_mcp_host_is_accepted(host):
    answer = host.register(
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        client_uri="https://host.example",
        redirect_uris=[REDIRECT_URI, "http://localhost:33418/callback", "vscode://callback"],
    )

    assert answer.status_code == 201
    stored = Application.objects.get()
    assert stored.redirect_uris.split() == [
        REDIRECT_URI,
        "http://localhost:33418/callback",
        "vscode://callback",
    ]
    assert stored.authorization_grant_type == "authorization-code"


@pytest.mark.parametrize(
    "metadata",
    [
        {"redirect_uris": [f"http://127.0.0.1:{port}/cb" for port in range(1000, 11000)]},
        {"redirect_uris": [f"http://127.0.0.1:{port}/cb" for port in range(1000, 1011)]},
        {"redirect_uris": []},
        {"redirect_uris": REDIRECT_URI},
        {"client_name": {"text": "x"}},
        {"client_name": ["x"]},
        {"client_name": 7},
        {"client_name": "x" * 256},
        {"client_name": "Host\nSecond line"},
        {"client_uri": {"x": 1}},
    ],
    ids=[
        "10000-uris",
        "11-uris",
        "no-uris",
        "uri-string",
        "name-object",
        "name-list",
        "name-number",
        "name-long",
        "name-newline",
        "client-uri-object",
    ],
)
def test_lists_and_text_fields_are_bounded(host, metadata):
    answer = host.register(**metadata)

    assert answer.status_code == 400
    assert answer.json()["error"] in ("invalid_client_metadata", "invalid_redirect_uri")
    assert Application.objects.count() == 0


def test_an_update_follows_the_same_rule_and_changes_nothing_when_refused(host):
    registered = host.register().json()
    url = registered["registration_client_uri"]
    headers = {"Authorization": f"Bearer {registered['registration_access_token']}"}
    base = {"client_name": "Plain Host", "token_endpoint_auth_method": "none"}

    remote = requests.put(url, json={**base, "redirect_uris": ["http://evil.example/cb"]}, headers=headers)
    smuggled = requests.put(url, json={**base, "redirect_uris": [SMUGGLED[0]]}, headers=headers)
    granted = requests.put(
        url, json={**base, "redirect_uris": [REDIRECT_URI], "grant_types": ["password"]}, headers=headers
    )
    fine = requests.put(url, json={**base, "redirect_uris": ["http://localhost:9/cb"]}, headers=headers)

    assert [remote.status_code, smuggled.status_code, granted.status_code] == [400, 400, 400]
    assert fine.status_code == 200
    assert Application.objects.get().redirect_uris == "http://localhost:9/cb"


@pytest.mark.parametrize(
    "uris", [[SMUGGLED[0]], ["http://evil.example/cb"]], ids=["whitespace", "remote-http"]
)
def test_a_metadata_document_follows_the_same_rule(host, documents, uris):
    client_id = documents.client_document("smuggling.json", redirect_uris=uris)

    answer = host.authorize(client_id, host.base + "/alpha/mcp")

    assert answer.status_code == 400
    assert "evil.example" not in answer.headers.get("Location", "")
    assert Application.objects.count() == 0


def test_a_cross_site_registration_carrying_a_session_cookie_is_owned_by_nobody(host):
    """A registration from another origin, with no CSRF token, carrying a session cookie: RFC 7591
    registration is anonymous, so the session lends it no owner."""
    answer = host.browser.post(
        f"{host.base}/oauth/register",
        json={
            "client_name": "Cross Site",
            "redirect_uris": [REDIRECT_URI],
            "token_endpoint_auth_method": "none",
        },
        headers={"Origin": "https://evil.example"},
    )

    assert answer.status_code == 201
    assert host.browser.cookies.get("sessionid")
    assert Application.objects.get(client_id=answer.json()["client_id"]).user_id is None
