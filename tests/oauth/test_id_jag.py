"""The checks of an Identity Assertion JWT Authorization Grant (ID-JAG) before the registry's authorization
server may exchange it: signed here by a trusted issuer's real keys (RSA and EC), and every way one is
refused, each with its reason: wrong typ, another audience, an unknown resource, an expired or too long
assertion, an unknown issuer, `alg: none`, a key of another issuer, another client, a jti used twice."""

import time
import uuid

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from oauth.id_jag import AssertionRefused, id_jag_verified
from oauth.models import TrustedIssuer

pytestmark = pytest.mark.django_db

REGISTRY = "https://registry.example.com"
ORIGINS = {"https://registry.example.com:443"}  # as core/public_url.origin_of spells an origin
IDP = "https://idp.example.com"
RESOURCE = f"{REGISTRY}/weather/mcp"


def jwk_of(key, kid: str) -> dict:
    public = (
        jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
        if isinstance(key, rsa.RSAPrivateKey)
        else jwt.algorithms.ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
    )
    return {**public, "kid": kid}


@pytest.fixture
def idp():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    issuer = TrustedIssuer.objects.create(issuer=IDP, jwks={"keys": [jwk_of(key, "k1")]}, user_claim="email")
    return issuer, key


def assertion(key, *, kid="k1", alg="RS256", typ="oauth-id-jag+jwt", **claims) -> str:
    now = int(time.time())
    body = {
        "iss": IDP,
        "sub": "00u1",
        "email": "ada@example.com",
        "aud": REGISTRY,
        "client_id": "host-1",
        "resource": RESOURCE,
        "scope": "mcp offline_access",
        "jti": uuid.uuid4().hex,
        "iat": now,
        "exp": now + 300,
        **claims,
    }
    return jwt.encode(body, key, algorithm=alg, headers={"typ": typ, "kid": kid})


def verified(token: str, client_id: str = "host-1"):
    return id_jag_verified(token, registry_issuer=REGISTRY, origins=ORIGINS, client_id=client_id)


def test_a_trusted_issuers_assertion_names_the_user_the_resource_and_the_scopes(idp):
    issuer, key = idp

    found = verified(assertion(key))

    assert (found.issuer, found.user_value, found.resource, found.audience) == (
        issuer,
        "ada@example.com",
        RESOURCE,
        "/weather",
    )
    assert found.scopes == ("mcp", "offline_access")


def test_an_ec_key_is_accepted_too(idp):
    issuer, _ = idp
    key = ec.generate_private_key(ec.SECP256R1())
    issuer.jwks = {"keys": [*issuer.jwks["keys"], jwk_of(key, "k2")]}
    issuer.save()

    assert verified(assertion(key, kid="k2", alg="ES256")).user_value == "ada@example.com"


def test_the_same_jti_twice_is_refused(idp):
    _, key = idp
    token = assertion(key, jti=f"once-{uuid.uuid4().hex}")
    verified(token)

    with pytest.raises(AssertionRefused, match=r"used before \(its jti\)"):
        verified(token)


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda key: assertion(key, typ="JWT"), r"typ is not oauth-id-jag\+jwt"),
        (
            lambda key: assertion(key, aud="https://elsewhere.example.com"),
            "not valid: Audience doesn't match",
        ),
        (
            lambda key: assertion(key, resource="https://elsewhere.example.com/x/mcp"),
            "resource is not one of",
        ),
        (lambda key: assertion(key, resource=f"{REGISTRY}/weather/other"), "resource is not one of"),
        (lambda key: assertion(key, iat=int(time.time()) - 900, exp=int(time.time()) - 600), "has expired"),
        (lambda key: assertion(key, exp=int(time.time()) + 3600), "lives longer than 600 s"),
        (
            lambda key: assertion(key, iss="https://unknown.example.com"),
            "issuer is not a trusted identity provider",
        ),
        (lambda key: assertion(key, client_id="another-host"), "issued to another client"),
        (lambda key: assertion(key, sub=None), "Subject must be a string"),
        (
            lambda key: assertion(rsa.generate_private_key(public_exponent=65537, key_size=2048)),
            "signature does not verify",
        ),
        (lambda key: assertion(key, kid="k9"), "No key of the issuer has the assertion's kid"),
    ],
)
def test_each_check_refuses_with_its_reason(idp, make, said):
    _, key = idp

    with pytest.raises(AssertionRefused, match=said):
        verified(make(key))


def test_alg_none_is_never_accepted_even_when_listed(idp):
    issuer, _ = idp
    issuer.algorithms = ["none", "RS256"]
    issuer.save()
    now = int(time.time())
    unsigned = jwt.encode(
        {"iss": IDP, "aud": REGISTRY, "jti": "x", "iat": now, "exp": now + 60, "email": "a@b.c"},
        None,
        algorithm="none",
        headers={"typ": "oauth-id-jag+jwt"},
    )

    with pytest.raises(AssertionRefused, match="signed with none, not an allowed algorithm"):
        verified(unsigned)


def test_a_disabled_issuer_is_not_trusted(idp):
    issuer, key = idp
    issuer.is_enabled = False
    issuer.save()

    with pytest.raises(AssertionRefused, match="not a trusted identity provider"):
        verified(assertion(key))


def test_the_issuers_keys_are_fetched_under_the_outbound_rules_kept_and_fetched_again_for_a_new_kid(
    idp, settings
):
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    issuer, key = idp
    published = {"keys": issuer.jwks["keys"]}
    fetched = []

    class Keys(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps(published).encode()
            fetched.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Keys)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    issuer.jwks, issuer.jwks_url = {}, f"http://127.0.0.1:{server.server_port}/jwks.json"
    issuer.save()
    rotated = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    try:
        with pytest.raises(
            AssertionRefused,
            match="keys could not be fetched: The JWK Set http://127.0.0.1:.*/jwks.json is not https",
        ):
            verified(assertion(key))  # plain http only to loopback, when development allows it
        settings.UPSTREAM_OAUTH_ALLOW_LOOPBACK = True
        found = verified(assertion(key))
        verified(assertion(key))  # the keys as kept
        published["keys"] = [*published["keys"], jwk_of(rotated, "k2")]
        verified(assertion(rotated, kid="k2"))  # a new kid: fetched again
        with pytest.raises(AssertionRefused, match="No key of the issuer has the assertion's kid"):
            verified(assertion(rotated, kid="made-up"))  # not fetched again so soon
    finally:
        server.shutdown()

    assert found.user_value == "ada@example.com"
    assert fetched == ["/jwks.json", "/jwks.json"]


def test_an_administrator_adds_an_issuer_in_the_console_by_the_one_rule_and_it_is_audited(admin_client):
    from accounts.models import AuditEvent

    refused = admin_client.post(
        "/admin/oauth/trustedissuer/add/",
        {
            "issuer": "idp.example.com",
            "jwks": "{}",
            "algorithms": '["none"]',
            "user_claim": "sub",
            "is_enabled": "on",
        },
    )
    added = admin_client.post(
        "/admin/oauth/trustedissuer/add/",
        {
            "issuer": IDP,
            "jwks_url": "https://idp.example.com/keys",
            "jwks": "{}",
            "algorithms": '["RS256"]',
            "user_claim": "email",
            "is_enabled": "on",
        },
    )

    page = refused.content.decode()
    assert refused.status_code == 200
    assert "An issuer is the identity provider" in page and "never none" in page
    assert "Give the URL of its keys, or the keys themselves." in page
    assert added.status_code == 302
    assert TrustedIssuer.objects.get().algorithms == ["RS256"]
    event = AuditEvent.objects.get(action="oauth.issuer_save")
    assert (event.target, event.detail["created"]) == (f"issuer:{IDP}", True)
