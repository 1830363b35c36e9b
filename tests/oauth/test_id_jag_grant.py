"""The JWT bearer grant of an identity provider's assertion (ID-JAG) at the registry's token endpoint,
over real HTTP on loopback: a host that registered for the authorization code flow exchanges an assertion
signed by a trusted issuer's real key for a token bound to the assertion's resource, which the `mcp` SDK
then uses through the gateway to a real MCP server. Every refusal is `invalid_grant` with its reason in
the audit trail (never the assertion); scopes beyond the assertion's are dropped; the token is judged like
a consented one (revocation, and the server's tools changing after the grant)."""

import time
import uuid

import jwt
import pytest
import requests
from allauth.socialaccount.models import SocialAccount
from cryptography.hazmat.primitives.asymmetric import rsa
from oauth2_provider.models import AccessToken, Application

from accounts.models import AuditEvent
from oauth import services
from oauth.models import Consent, TrustedIssuer
from servers.models import Server, ToolChange
from servers.services.pins import tool_change_approve, tools_pin
from tests.gateway.gateway_calls import INITIALIZE, bearer, list_and_call, post, run
from tests.oauth.test_id_jag import jwk_of

pytestmark = pytest.mark.django_db(transaction=True)

IDP = "https://idp.example.com"
GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"


@pytest.fixture
def idp():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    TrustedIssuer.objects.create(issuer=IDP, jwks={"keys": [jwk_of(key, "k1")]})
    return key


@pytest.fixture
def client_id(host):
    answer = host.register()  # for the authorization code flow only, as hosts register
    assert answer.json()["grant_types"] == ["authorization_code", "refresh_token"]
    return answer.json()["client_id"]


def assertion(host, key, client: str, *, kid="k1", alg="RS256", typ="oauth-id-jag+jwt", **claims) -> str:
    now = int(time.time())
    body = {
        "iss": IDP,
        "sub": "olga",
        "aud": host.base,
        "client_id": client,
        "resource": f"{host.base}/alpha/mcp",
        "scope": "mcp",
        "jti": uuid.uuid4().hex,
        "iat": now,
        "exp": now + 300,
        **claims,
    }
    body = {name: value for name, value in body.items() if value is not None}
    return jwt.encode(body, key, algorithm=alg, headers={"typ": typ, "kid": kid})


def exchange(host, client_id: str, signed: str, **extra) -> requests.Response:
    form = {"grant_type": GRANT, "assertion": signed, "client_id": client_id, **extra}
    return requests.post(f"{host.base}/oauth/token", data=form, timeout=30)


def test_an_assertion_gets_a_token_bound_to_its_resource_that_the_sdk_uses_and_no_refresh_token(
    host, servers, gateway, idp, client_id
):
    signed = assertion(host, idp, client_id)

    answer = exchange(host, client_id, signed)

    granted = answer.json()
    assert (answer.status_code, answer.headers["Cache-Control"]) == (200, "no-store"), answer.text
    assert sorted(granted) == ["access_token", "expires_in", "scope", "token_type"]
    assert (granted["token_type"], granted["scope"], granted["expires_in"]) == ("Bearer", "mcp", 3600)
    tools, added, _ = run(gateway.url("/alpha/mcp"), granted["access_token"], list_and_call)
    assert (tools, added) == (["add", "current_time", "echo"], "5")
    at_beta, _, _ = post(gateway.port, "/beta/mcp", INITIALIZE, bearer(granted["access_token"]))
    assert at_beta == 401
    token = AccessToken.objects.get(user__isnull=False)
    assert (token.user.username, token.resource, token.application.client_id) == (
        "olga",
        [f"{host.base}/alpha/mcp"],
        client_id,
    )
    consent = Consent.objects.get()
    assert (consent.issuer, consent.all_rights, consent.administers) == (IDP, True, False)
    event = AuditEvent.objects.get(action="oauth.assertion")
    assert (event.actor_name, event.target, event.detail["issuer"], event.detail["scopes"]) == (
        "olga",
        f"application:{client_id}",
        IDP,
        ["mcp"],
    )
    assert signed not in str(AuditEvent.objects.values_list("detail", flat=True))


def test_the_same_assertion_twice_is_refused_and_the_reason_audited(host, servers, idp, client_id):
    signed = assertion(host, idp, client_id)

    first = exchange(host, client_id, signed)
    again = exchange(host, client_id, signed)

    assert first.status_code == 200
    assert (again.status_code, again.json()["error"]) == (400, "invalid_grant")
    assert again.json()["error_description"] == "The assertion was used before (its jti)."
    refused = AuditEvent.objects.get(action="oauth.assertion_refused")
    assert (refused.actor_name, refused.target, refused.detail) == (
        "system",
        f"application:{client_id}",
        {"reason": "The assertion was used before (its jti)."},
    )
    assert AccessToken.objects.filter(user__isnull=False).count() == 1


def other_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


REFUSALS = {
    "wrong typ": (lambda h, k, c: assertion(h, k, c, typ="JWT"), "typ is not oauth-id-jag+jwt"),
    "another aud": (
        lambda h, k, c: assertion(h, k, c, aud="https://other.example"),
        "Audience doesn't match",
    ),
    "unknown resource": (
        lambda h, k, c: assertion(h, k, c, resource="https://elsewhere.example/alpha/mcp"),
        "resource is not one of this registry's",
    ),
    "expired": (
        lambda h, k, c: assertion(h, k, c, iat=int(time.time()) - 400, exp=int(time.time()) - 100),
        "has expired",
    ),
    "unknown issuer": (
        lambda h, k, c: assertion(h, k, c, iss="https://stranger.example"),
        "issuer is not a trusted identity provider",
    ),
    "alg none": (lambda h, k, c: assertion(h, None, c, alg="none"), "not an allowed algorithm"),
    "key of another issuer": (
        lambda h, k, c: assertion(h, other_key(), c),
        "signature does not verify with the issuer's keys",
    ),
    "another client": (
        lambda h, k, c: assertion(h, k, c, client_id="someone-else"),
        "issued to another client",
    ),
    "unknown user": (
        lambda h, k, c: assertion(h, k, c, sub="nobody"),
        "No active user of the registry is sub",
    ),
    "service account": (
        lambda h, k, c: assertion(h, k, c, sub="robot"),
        "No active user of the registry is sub",
    ),
    "only a foreign scope": (
        lambda h, k, c: assertion(h, k, c, scope="chat.read"),
        "does not grant the scope mcp",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_each_refusal_is_invalid_grant_with_its_reason_audited_and_no_token(
    host, servers, idp, client_id, member, case
):
    member("robot", is_service_account=True)
    make, reason = REFUSALS[case]
    signed = make(host, idp, client_id)

    answer = exchange(host, client_id, signed)

    assert (answer.status_code, answer.json()["error"]) == (400, "invalid_grant")
    assert reason in answer.json()["error_description"]
    refused = AuditEvent.objects.get(action="oauth.assertion_refused")
    assert reason in refused.detail["reason"]
    assert signed not in refused.detail["reason"]
    assert AccessToken.objects.filter(user__isnull=False).count() == 0


def test_scopes_beyond_the_assertions_are_dropped_and_the_answer_says_what_was_granted(
    host, servers, idp, client_id
):
    narrow = exchange(host, client_id, assertion(host, idp, client_id, scope="mcp"), scope="mcp registry")
    unnamed = exchange(host, client_id, assertion(host, idp, client_id, scope=None), scope="mcp registry")
    at_registry = exchange(
        host, client_id, assertion(host, idp, client_id, resource=host.base, scope="mcp registry")
    )

    assert (narrow.status_code, narrow.json()["scope"]) == (200, "mcp")
    assert (unnamed.status_code, unnamed.json()["scope"]) == (200, "mcp registry")
    assert (at_registry.status_code, at_registry.json()["scope"]) == (200, "registry")
    assert sorted(AccessToken.objects.filter(user__isnull=False).values_list("scope", flat=True)) == [
        "mcp",
        "mcp registry",
        "registry",
    ]


def test_a_resource_asked_for_must_be_the_assertions(host, servers, idp, client_id):
    answer = exchange(host, client_id, assertion(host, idp, client_id), resource=f"{host.base}/beta/mcp")

    assert (answer.status_code, answer.json()["error"]) == (400, "invalid_grant")
    assert answer.json()["error_description"] == "The resource asked for is not the assertion's."


def test_a_confidential_client_authenticates_with_its_secret(host, servers, idp):
    application = Application.objects.create(
        name="Console host",
        client_type="confidential",
        authorization_grant_type="authorization-code",
        redirect_uris="http://127.0.0.1/cb",
        client_secret="s3cret-of-the-host",
    )
    signed = assertion(host, idp, application.client_id)

    wrong = exchange(host, application.client_id, signed, client_secret="guess")
    right = exchange(host, application.client_id, signed, client_secret="s3cret-of-the-host")

    assert (wrong.status_code, wrong.json()["error"]) == (401, "invalid_client")
    assert (right.status_code, right.json()["scope"]) == (200, "mcp")
    assert not AuditEvent.objects.filter(action="oauth.assertion_refused").exists()  # (no one authenticated)


def test_a_host_known_by_its_client_id_metadata_document_presents_an_assertion(host, servers, idp, documents):
    document = documents.client_document("enterprise-host.json")

    answer = exchange(host, document, assertion(host, idp, document))

    assert (answer.status_code, answer.json()["scope"]) == (200, "mcp"), answer.text
    application = Application.objects.get(client_id=document)
    assert (application.registration_source, application.name) == ("cimd", "Verified Host")
    assert AccessToken.objects.get(user__isnull=False).application == application


def test_the_user_is_found_through_their_login_at_the_same_identity_provider_or_by_the_issuers_claim(
    host, servers, idp, client_id, member, settings
):
    settings.SOCIALACCOUNT_PROVIDERS = {
        "openid_connect": {"APPS": [{"provider_id": "corp", "settings": {"server_url": IDP + "/"}}]}
    }
    linked = member("olga-at-corp", "users")
    SocialAccount.objects.create(user=linked, provider="corp", uid="00u-olga")
    TrustedIssuer.objects.filter(issuer=IDP).update(user_claim="email")
    member("edgar", "users", email="Edgar@example.com")

    by_link = exchange(host, client_id, assertion(host, idp, client_id, sub="00u-olga"))
    by_email = exchange(
        host, client_id, assertion(host, idp, client_id, sub="00u-ed", email="edgar@example.com")
    )

    assert (by_link.status_code, by_email.status_code) == (200, 200), (by_link.text, by_email.text)
    assert sorted(
        AccessToken.objects.filter(user__isnull=False).values_list("user__username", flat=True)
    ) == ["edgar", "olga-at-corp"]


def test_the_tokens_are_refused_once_the_servers_tools_change_and_when_the_user_revokes_them(
    host, servers, gateway, idp, client_id, member
):
    alpha = Server.objects.get(path="/alpha")
    tools_pin(alpha, [{"name": "add", "description": "Adds.", "inputSchema": {"type": "object"}}])
    alpha.refresh_from_db()
    first = exchange(host, client_id, assertion(host, idp, client_id)).json()["access_token"]
    ok, _, _ = post(gateway.port, "/alpha/mcp", INITIALIZE, bearer(first))
    assert Consent.objects.get().tool_sets == {"/alpha": alpha.tool_set_digest}

    tools_pin(alpha, [{"name": "add", "description": "Adds, and more.", "inputSchema": {"type": "object"}}])
    operator = member("opal", is_superuser=True)
    tool_change_approve(actor=operator, change=ToolChange.objects.get(server=alpha, name="add"))
    changed, _, body = post(gateway.port, "/alpha/mcp", INITIALIZE, bearer(first))
    second = exchange(host, client_id, assertion(host, idp, client_id)).json()["access_token"]
    again, _, _ = post(gateway.port, "/alpha/mcp", INITIALIZE, bearer(second))
    services.consent_withdraw(actor=operator, consent=Consent.objects.get())
    withdrawn, _, _ = post(gateway.port, "/alpha/mcp", INITIALIZE, bearer(second))

    assert (ok, changed, again, withdrawn) == (200, 401, 200, 401)
    assert b"changed since your identity provider granted this token" in body
    assert Consent.objects.count() == 0


def test_a_users_own_consent_stands_as_they_narrowed_it(host, servers, gateway, idp):
    tokens = host.tokens(host.base + "/alpha/mcp")  # olga consented, every tool ticked
    consent = Consent.objects.get()
    consent.tools = {"/alpha": ["add"]}
    consent.all_rights = False
    consent.save()

    granted = exchange(host, tokens["client_id"], assertion(host, idp, tokens["client_id"])).json()
    tools, added, denied = run(gateway.url("/alpha/mcp"), granted["access_token"], list_and_call)

    assert (tools, added) == (["add"], "5")
    assert "current_time" in denied
    consent.refresh_from_db()
    assert (consent.issuer, consent.tools) == ("", {"/alpha": ["add"]})


def test_the_metadata_says_the_token_endpoint_takes_id_jags(host):
    metadata = requests.get(f"{host.base}/.well-known/oauth-authorization-server", timeout=10).json()

    assert metadata["grant_types_supported"] == [
        "authorization_code",
        "refresh_token",
        "urn:ietf:params:oauth:grant-type:jwt-bearer",
    ]
    assert metadata["authorization_grant_profiles_supported"] == [
        "urn:ietf:params:oauth:grant-profile:id-jag"
    ]
    assert metadata["token_endpoint"] == f"{host.base}/oauth/token"
