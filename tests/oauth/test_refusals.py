"""What the authorization server and the gateway refuse: authorization requests without S256 PKCE, with an
unregistered redirect URI or a resource that is not ours; tokens used at another server; a refresh token
used twice (its family ends); bad metadata documents; registration floods; withdrawn consents."""

import json
import re

import pytest
import requests
from oauth2_provider.models import AccessToken, Application

from accounts.models import AuditEvent
from oauth.models import Consent
from servers.models import Server
from tests.factories import AgentFactory
from tests.gateway.gateway_calls import INITIALIZE, post
from tests.oauth.conftest import VERIFIER, error_of, inputs_of
from tests.oauth.flow import REDIRECT_URI

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_authorization_without_pkce_or_with_plain_is_refused(host):
    client_id = host.register().json()["client_id"]
    resource = host.base + "/alpha/mcp"

    missing = host.authorize(client_id, resource, code_challenge=None, code_challenge_method=None)
    plain = host.authorize(client_id, resource, code_challenge=VERIFIER, code_challenge_method="plain")

    assert (missing.status_code, error_of(missing.headers["Location"])) == (302, "invalid_request")
    assert (plain.status_code, error_of(plain.headers["Location"])) == (302, "invalid_request")
    assert AccessToken.objects.filter(user__isnull=False).count() == 0


def test_a_redirect_uri_that_was_not_registered_is_never_redirected_to(host):
    client_id = host.register().json()["client_id"]

    answer = host.authorize(client_id, host.base + "/alpha/mcp", redirect_uri="https://evil.example/cb")

    assert answer.status_code == 400
    assert "evil.example" not in answer.headers.get("Location", "")


@pytest.mark.parametrize(
    "resource", [None, "https://elsewhere.example/alpha/mcp", "{base}/alpha/messages", "{base}/al pha/mcp"]
)
def test_a_resource_that_is_not_ours_is_refused(host, resource):
    client_id = host.register().json()["client_id"]

    answer = host.authorize(client_id, resource.format(base=host.base) if resource else None)

    assert (answer.status_code, error_of(answer.headers["Location"])) == (302, "invalid_target")


def test_a_token_for_alpha_is_refused_at_beta_and_at_the_registry_api(host, servers, gateway):
    tokens = host.tokens(host.base + "/alpha/mcp")
    headers = {"Authorization": f"Bearer {tokens['access_token']}"}

    at_alpha, _, _ = post(gateway.port, "/alpha/mcp", INITIALIZE, headers)
    at_beta, beta_headers, body = post(gateway.port, "/beta/mcp", INITIALIZE, headers)
    at_api = requests.get(f"{host.base}/v0.1/servers", headers=headers)

    assert at_alpha == 200
    assert (at_beta, json.loads(body)["error_code"]) == (401, "token_audience")
    assert {k.lower(): v for k, v in beta_headers.items()}["www-authenticate"] == (
        f'Bearer resource_metadata="{host.base}/.well-known/oauth-protected-resource/beta/mcp", '
        'scope="mcp", error="invalid_token"'
    )
    assert (at_api.status_code, at_api.json()["error"]["code"]) == (401, "UNAUTHORIZED")


def test_the_gateway_401_points_at_the_resource_metadata(host, servers, gateway):
    answered, headers, _ = post(gateway.port, "/alpha/mcp", INITIALIZE)

    assert answered == 401
    assert {k.lower(): v for k, v in headers.items()}["www-authenticate"] == (
        f'Bearer resource_metadata="{host.base}/.well-known/oauth-protected-resource/alpha/mcp", scope="mcp"'
    )


def test_a_refresh_token_used_twice_revokes_its_whole_family(host, servers, gateway):
    tokens = host.tokens(host.base + "/alpha/mcp")
    refresh = {
        "grant_type": "refresh_token",
        "refresh_token": tokens["refresh_token"],
        "client_id": tokens["client_id"],
    }

    first = requests.post(f"{host.base}/oauth/token", data=refresh)
    replayed = requests.post(f"{host.base}/oauth/token", data=refresh)
    newest = first.json()["access_token"]
    answered, _, body = post(gateway.port, "/alpha/mcp", INITIALIZE, {"Authorization": f"Bearer {newest}"})

    assert (first.status_code, replayed.status_code, replayed.json()["error"]) == (200, 400, "invalid_grant")
    assert (answered, json.loads(body)["error_code"]) == (401, "token_revoked")


def test_a_revoked_token_and_a_withdrawn_consent_end_access_at_once(host, servers, gateway, olga):
    tokens = host.tokens(host.base + "/alpha/mcp")
    headers = {"Authorization": f"Bearer {tokens['access_token']}"}
    assert post(gateway.port, "/alpha/mcp", INITIALIZE, headers)[0] == 200

    page = host.browser.get(f"{host.base}/api/tokens")
    consent = Consent.objects.get()
    withdrawn = host.browser.post(
        f"{host.base}/oauth/applications/{consent.pk}/revoke",
        data={"csrfmiddlewaretoken": host.browser.cookies["csrftoken"], "confirm": "yes"},
        headers={"Referer": page.url},
        allow_redirects=False,
    )
    answered, _, body = post(gateway.port, "/alpha/mcp", INITIALIZE, headers)

    assert "Plain Host" in page.text and withdrawn.status_code == 303
    assert (answered, json.loads(body)["error_code"]) == (401, "token_revoked")
    assert AuditEvent.objects.filter(action="oauth.consent_withdraw", actor=olga).count() == 1

    again = host.tokens(host.base + "/alpha/mcp")
    revoked = requests.post(
        f"{host.base}/oauth/revoke", data={"token": again["access_token"], "client_id": again["client_id"]}
    )
    answered, _, _ = post(
        gateway.port, "/alpha/mcp", INITIALIZE, {"Authorization": f"Bearer {again['access_token']}"}
    )

    assert (revoked.status_code, answered) == (200, 401)


def test_registration_is_limited_per_address_and_http_redirects_must_be_loopback(host, settings):
    settings.OAUTH_REGISTRATIONS_PER_HOUR = 2

    remote = host.register(redirect_uris=["http://app.example/callback"])
    second = host.register()
    flooded = host.register()

    assert (remote.status_code, remote.json()["error"]) == (400, "invalid_redirect_uri")
    assert second.status_code == 201
    assert (flooded.status_code, flooded.json()["error"]) == (429, "temporarily_unavailable")
    assert int(flooded.headers["Retry-After"]) > 0
    assert Application.objects.count() == 1


def test_a_metadata_document_that_is_fine_registers_its_client(host, documents):
    client_id = documents.client_document("good.json")

    answer = host.authorize(client_id, host.base + "/alpha/mcp")

    assert answer.status_code == 200 and "identity verified" in answer.text
    assert Application.objects.get().registration_source == "cimd"


@pytest.mark.parametrize(
    "problem", ["http", "too_large", "too_slow", "other_redirect", "not_json", "loopback_off"]
)
def test_a_bad_metadata_document_registers_nothing(host, documents, settings, problem):
    client_id = documents.client_document(f"{problem}.json")
    if problem == "http":
        client_id = client_id.replace("https://", "http://")
    elif problem == "too_large":
        documents.put(
            "too_large.json", {"client_id": client_id, "redirect_uris": [REDIRECT_URI], "pad": "x" * 20000}
        )
    elif problem == "too_slow":
        documents.put("too_slow.json", {"client_id": client_id, "redirect_uris": [REDIRECT_URI]}, delay=3.0)
    elif problem == "other_redirect":
        documents.client_document("other_redirect.json", redirect_uris=["http://127.0.0.1:9/elsewhere"])
    elif problem == "not_json":
        documents.put("not_json.json", b"<html>", content_type="text/html")
    elif problem == "loopback_off":
        settings.OAUTH_CIMD_ALLOW_LOOPBACK = False

    answer = host.authorize(client_id, host.base + "/alpha/mcp")

    assert answer.status_code == 400
    assert REDIRECT_URI not in answer.headers.get("Location", "")
    # (a fine document that lacks the redirect URI registers its client, which may not use that URI)
    assert Application.objects.count() == (1 if problem == "other_redirect" else 0)


def test_a_token_for_the_registry_reads_its_api_and_nothing_else(host, servers, gateway):
    tokens = host.tokens(host.base, scope="registry")
    mcp_only = host.tokens(host.base)  # the registry as resource, without the registry scope
    headers = {"Authorization": f"Bearer {tokens['access_token']}"}

    listed = requests.get(f"{host.base}/v0.1/servers", headers=headers)
    at_gateway, _, body = post(gateway.port, "/alpha/mcp", INITIALIZE, headers)
    issuing = requests.post(f"{host.base}/api/tokens/generate", json={}, headers=headers)
    without_scope = requests.get(
        f"{host.base}/api/agents", headers={"Authorization": f"Bearer {mcp_only['access_token']}"}
    )

    assert (listed.status_code, len(listed.json()["servers"])) == (200, 2)
    assert (at_gateway, json.loads(body)["error_code"]) == (401, "token_audience")
    assert (issuing.status_code, issuing.json()["error_code"]) == (403, "permission_denied")
    assert (without_scope.status_code, without_scope.json()["error_code"]) == (403, "insufficient_scope")


def test_a_user_who_lost_the_server_gets_insufficient_scope(host, servers, gateway, olga):
    tokens = host.tokens(host.base + "/alpha/mcp")
    olga.groups.clear()

    answered, headers, body = post(
        gateway.port, "/alpha/mcp", INITIALIZE, {"Authorization": f"Bearer {tokens['access_token']}"}
    )

    assert (answered, json.loads(body)["error_code"]) == (403, "insufficient_scope")
    assert {k.lower(): v for k, v in headers.items()}["www-authenticate"] == (
        f'Bearer resource_metadata="{host.base}/.well-known/oauth-protected-resource/alpha/mcp", '
        'scope="mcp", error="insufficient_scope"'
    )


def test_validate_holds_an_applications_token_to_its_server(host, servers):
    tokens = host.tokens(host.base + "/alpha/mcp")

    def check(url):
        return requests.get(
            f"{host.base}/validate",
            headers={
                "Authorization": f"Bearer {tokens['access_token']}",
                "X-Original-URL": url,
                "X-Body": json.dumps(INITIALIZE),
            },
        )

    alpha, beta = check(f"{host.base}/alpha/mcp"), check(f"{host.base}/beta/mcp")

    assert alpha.status_code == 200
    assert (beta.status_code, beta.json()["error_code"]) == (401, "token_audience")


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000,
        b"\xff\xfe",
        b'{"redirect_uris": ["http://127.0.0.1/cb"], "client_name": "a\\u0000b"}',
        b"null",
    ],
)
def test_hostile_registrations_are_refused_with_the_oauth_error_format(host, body):
    answer = requests.post(
        f"{host.base}/oauth/register", data=body, headers={"Content-Type": "application/json"}
    )

    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_client_metadata"
    assert Application.objects.count() == 0


def test_an_altered_consent_form_is_refused_and_grants_nothing(host):
    client_id = host.register().json()["client_id"]
    page = host.authorize(client_id, host.base + "/alpha/mcp")
    form = {name: value for name, value in inputs_of(page.text) if name not in ("rights", "remember")}

    answers = [
        host.browser.post(f"{host.base}/oauth/authorize", data={**form, **change}, allow_redirects=False)
        for change in (
            {"rights": "somebody-elses-scope", "allow": "on"},
            {"client_id": "", "allow": "on"},
            {"resource": "https://elsewhere.example/alpha/mcp", "rights": "alpha-users", "allow": "on"},
        )
    ]

    assert [answer.status_code for answer in answers[:2]] == [400, 400]
    assert (answers[2].status_code, error_of(answers[2].headers["Location"])) == (302, "invalid_target")
    assert (Consent.objects.count(), AccessToken.objects.filter(user__isnull=False).count()) == (0, 0)


def test_a_remembered_consent_is_asked_again_once_the_user_has_no_rights_there(host, olga):
    client_id = host.register().json()["client_id"]
    resource = host.base + "/alpha/mcp"
    host.consent(host.authorize(client_id, resource), remember=True)

    remembered = host.authorize(client_id, resource)
    olga.groups.clear()
    without_rights = host.authorize(client_id, resource)

    assert remembered.status_code == 200 and 'http-equiv="refresh"' in remembered.text
    assert without_rights.status_code == 200 and 'id="deny"' in without_rights.text
    assert 'id="allow"' not in without_rights.text


def test_the_consent_page_offers_the_servers_tools_and_an_unticked_one_is_not_callable(host, servers):
    for name in ("add", "echo"):
        Server.objects.get(path="/alpha").tools.create(name=name)
    client_id = host.register().json()["client_id"]
    resource = host.base + "/alpha/mcp"
    page = host.authorize(client_id, resource)
    form = {name: value for name, value in inputs_of(page.text) if name not in ("tools", "remember")}
    form["rights"] = [value for name, value in inputs_of(page.text) if name == "rights"]

    answer = host.browser.post(
        f"{host.base}/oauth/authorize",
        data={**form, "tools": ["echo"], "allow": "on"},
        headers={"Referer": page.url},
        allow_redirects=False,
    )

    assert re.findall(r'name="tools" value="(\w+)" data-consent-tool checked', page.text) == ["add", "echo"]
    assert "__admin__" not in page.text  # a member is offered no administration
    assert answer.status_code == 302
    assert Consent.objects.get().tools == {"/alpha": ["echo"]}


def test_an_applications_token_for_a_server_is_refused_at_an_agent(host, servers, gateway, olga, token_for):
    AgentFactory(path="/travel", visibility="public", is_enabled=True)
    tokens = host.tokens(host.base + "/alpha/mcp")
    card = f"{host.base}/travel/a2a/.well-known/agent-card.json"

    bound = requests.get(card, headers={"Authorization": f"Bearer {tokens['access_token']}"})
    missing = requests.get(
        f"{host.base}/nowhere/a2a/.well-known/agent-card.json",
        headers={"Authorization": f"Bearer {tokens['access_token']}"},
    )
    registry_token = requests.get(card, headers={"Authorization": f"Bearer {token_for(olga)}"})

    assert (bound.status_code, bound.json()["error_code"]) == (401, "token_audience")
    assert (missing.status_code, missing.json()["error_code"]) == (401, "token_audience")
    assert registry_token.status_code == 200
