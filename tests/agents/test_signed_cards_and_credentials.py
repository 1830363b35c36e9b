"""Signed agent cards are served as published, so their signatures still verify (a2a-sdk's own signer
and verifier, ES256), and an agent's outbound headers (and where its credential comes from, by the
servers' own rule) are the administrators' to set and nobody's to read."""

import copy

import pytest
from a2a.types import AgentCard
from a2a.utils.signing import InvalidSignaturesError, create_agent_card_signer, create_signature_verifier
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from django.urls import reverse
from google.protobuf.json_format import MessageToDict, ParseDict

from agents import services
from agents.cards import gateway_card
from agents.models import Agent
from tests.agents.test_a2a import V1_CARD, bearer, card_of, register

pytestmark = pytest.mark.django_db

KEY = ec.generate_private_key(ec.SECP256R1())
PRIVATE_PEM = KEY.private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
)
PUBLIC_PEM = KEY.public_key().public_bytes(
    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
)
verify = create_signature_verifier(lambda kid, jku: PUBLIC_PEM, algorithms=["ES256"])


def signed(card: dict) -> dict:
    sign = create_agent_card_signer(PRIVATE_PEM, {"kid": "k1", "alg": "ES256", "typ": "JOSE"})
    return MessageToDict(sign(ParseDict(copy.deepcopy(card), AgentCard())))


@pytest.fixture
def publisher(member, scope_factory, token_for):
    scope_factory("builders", group="builders", ui={"publish_agent": ["all"], "modify_service": ["all"]})
    return token_for(member("olivia", "builders"))


@pytest.fixture
def admin(member, token_for):
    return token_for(member("ada", "mcp-registry-admin"))


def put(client, token, path, card):
    detail = reverse("agents-api:detail", kwargs={"agent_path": path})
    return client.put(detail, card, content_type="application/json", headers=bearer(token))


def test_a_signed_card_is_served_as_published_and_its_signature_verifies(client, publisher):
    card = signed(V1_CARD)
    register(client, publisher, card | {"path": "/travel", "visibility": "public"})
    agent = Agent.objects.get(path="/travel")

    served = card_of(client, publisher, "/travel", format="a2a")
    at_gateway = gateway_card(agent, "https://registry.example.test")

    assert served == at_gateway == card
    verify(ParseDict(served, AgentCard()))  # raises if the card changed at all
    assert card_of(client, publisher, "/travel")["signed"] is True


def test_the_check_fails_on_a_card_the_gateway_would_have_rewritten(client, publisher):
    card = signed(V1_CARD)
    rewritten = {
        **card,
        "supportedInterfaces": [{**card["supportedInterfaces"][0], "url": "https://gw.test/a2a"}],
    }

    with pytest.raises(InvalidSignaturesError):
        verify(ParseDict(rewritten, AgentCard()))


def test_a_new_unsigned_card_or_a_change_of_the_card_drops_the_signed_copy(client, publisher):
    register(client, publisher, signed(V1_CARD) | {"path": "/travel"})
    register(client, publisher, signed(V1_CARD) | {"path": "/other"})
    other = Agent.objects.get(path="/other")

    replaced = put(client, publisher, "/travel", V1_CARD)
    services.agent_update(actor=None, agent=other, visibility="internal")
    kept = Agent.objects.get(path="/other").signed_card is not None
    services.agent_update(actor=None, agent=other, description="Changed")

    assert replaced.status_code == 200
    assert card_of(client, publisher, "/travel")["signed"] is False
    assert "signatures" not in card_of(client, publisher, "/travel", format="a2a")
    assert kept is True
    assert Agent.objects.get(path="/other").signed_card is None


def test_signatures_that_are_not_jws_are_refused(client, publisher):
    response = register(
        client,
        publisher,
        V1_CARD | {"path": "/travel", "signatures": [{"protected": "a+b", "signature": "x"}, 3]},
    )

    assert response.status_code == 422
    assert response.json()["errors"] == {
        "signatures": [
            "Signature 0: 'protected' must be base64url (no padding).",
            "Signature 1: signature must be an object.",
        ]
    }
    assert not Agent.objects.filter(path="/travel").exists()


def test_only_administrators_set_outbound_headers_and_nobody_reads_them(client, publisher, admin):
    refused = register(client, publisher, V1_CARD | {"path": "/travel", "headers": {"X-Api-Key": "k"}})
    created = register(client, admin, V1_CARD | {"path": "/travel", "headers": {"X-Api-Key": "k"}})
    replaced = put(client, admin, "/travel", V1_CARD | {"description": "New"})
    bad = put(client, admin, "/travel", V1_CARD | {"headers": {"X-Api-Key": "a\nb"}})

    assert refused.status_code == 422
    assert refused.json()["errors"] == {"headers": ["Only administrators set an agent's outbound headers."]}
    assert created.status_code == 201
    assert replaced.status_code == 200
    assert bad.json()["errors"] == {"headers": ["Header values cannot contain line breaks."]}
    assert Agent.objects.get(path="/travel").headers == {"X-Api-Key": "k"}  # a new card keeps them
    shown = client.get(reverse("agents-api:detail", kwargs={"agent_path": "/travel"}), headers=bearer(admin))
    assert "k" not in {str(value) for value in shown.json().values()}
    assert "headers" not in shown.json()


def test_where_an_agents_credential_comes_from_is_the_administrators_to_say_by_the_servers_rule(
    client, publisher, admin
):
    user_secret = {"upstream_auth": "user_secret", "user_secret_header": "X-Api-Key: {secret}"}
    refused = register(client, publisher, V1_CARD | {"path": "/travel"} | user_secret)
    no_secret = register(client, admin, V1_CARD | {"path": "/travel", "upstream_auth": "user_secret"})
    plain_http = register(
        client,
        admin,
        V1_CARD
        | {"path": "/travel", "url": "http://agents.example.test/a2a"}
        | {"upstream_auth": "user_oauth"},
    )
    created = register(client, admin, V1_CARD | {"path": "/travel"} | user_secret)
    replaced = put(client, admin, "/travel", V1_CARD | {"description": "New"})
    shown = client.get(reverse("agents-api:detail", kwargs={"agent_path": "/travel"}), headers=bearer(admin))

    assert refused.status_code == 422
    assert refused.json()["errors"] == {
        "upstream_auth": ["Only administrators choose where the agent's credentials come from."],
        "user_secret_header": ["Only administrators choose where the agent's credentials come from."],
    }
    assert no_secret.status_code == 422
    assert no_secret.json()["errors"] == {
        "user_secret_header": ['Write the header as "Name: value", e.g. "Authorization: Bearer {secret}".']
    }
    assert plain_http.status_code == 422
    assert plain_http.json()["errors"] == {"url": ["A target users sign in to must be reached over https."]}
    assert (created.status_code, replaced.status_code) == (201, 200)
    agent = Agent.objects.get(path="/travel")
    assert (agent.upstream_auth, agent.user_secret_header) == ("user_secret", "X-Api-Key: {secret}")
    assert not {"upstream_auth", "user_secret_header", "sealed_headers"} & set(shown.json())


def test_the_registrys_own_fields_beside_a_signed_card_never_enter_it(client, publisher):
    card = signed({name: value for name, value in V1_CARD.items() if name != "provider"})
    registry_fields = {
        "path": "/travel",
        "visibility": "public",
        "provider": "custom",
        "tags": "travel",
        "license": "MIT",
    }
    registered = register(client, publisher, card | registry_fields)
    assert registered.status_code == 201, registered.json()
    agent = Agent.objects.get(path="/travel")

    served = card_of(client, publisher, "/travel", format="a2a")

    assert served == gateway_card(agent, "https://registry.example.test") == card
    assert "provider" not in served
    verify(ParseDict(served, AgentCard()))
    assert (agent.provider, agent.tags, agent.license) == ("custom", ["travel"], "MIT")
