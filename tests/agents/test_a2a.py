"""A2A compatibility: v1.0 and v0.3 agent cards are accepted as they are, stored faithfully and served
back as A2A v1.0 AgentCards (`?format=a2a`) that the official a2a-sdk parses; a v0.3 card comes back as
the SDK's own v0.3 → v1.0 conversion would give it."""

import copy

import pytest
from a2a.compat.v0_3 import types as types_v03
from a2a.compat.v0_3.conversions import to_core_agent_card
from a2a.types import AgentCard
from django.urls import reverse
from google.protobuf.json_format import MessageToDict, ParseDict

from agents.a2a import Invalid, _read_extension, read_scheme
from agents.models import Agent
from tests.factories import AgentFactory

pytestmark = pytest.mark.django_db

V1_CARD = {
    "name": "Travel Planner",
    "description": "Plans trips end to end",
    "version": "2.0.1",
    "supportedInterfaces": [
        {"url": "https://travel.example.test/a2a/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": "https://travel.example.test/a2a/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
        {
            "url": "https://travel.example.test/a2a/rest",
            "protocolBinding": "HTTP+JSON",
            "protocolVersion": "1.0",
            "tenant": "acme",
        },
    ],
    "provider": {"organization": "Google", "url": "https://provider.example.test"},
    "documentationUrl": "https://travel.example.test/docs",
    "iconUrl": "https://travel.example.test/icon.png",
    "capabilities": {
        "streaming": True,
        "pushNotifications": False,
        "extendedAgentCard": True,
        "extensions": [
            {
                "uri": "https://ext.example.test/geo",
                "description": "Geo hints",
                "required": False,
                "params": {"p": 3},
            }
        ],
    },
    "securitySchemes": {
        "jwt": {
            "httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT", "description": "A JWT"}
        },
        "key": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}},
        "oauth": {
            "oauth2SecurityScheme": {
                "flows": {
                    "clientCredentials": {
                        "tokenUrl": "https://auth.example.test/token",
                        "scopes": {"trips:read": "Read trips"},
                    }
                },
                "oauth2MetadataUrl": "https://auth.example.test/.well-known/oauth-authorization-server",
            }
        },
        "oidc": {
            "openIdConnectSecurityScheme": {
                "openIdConnectUrl": "https://auth.example.test/.well-known/openid-configuration"
            }
        },
        "mtls": {"mtlsSecurityScheme": {"description": "Client certificates"}},
    },
    "securityRequirements": [
        {"schemes": {"oauth": {"list": ["trips:read"]}}},
        {"schemes": {"key": {"list": []}, "mtls": {"list": []}}},
    ],
    "defaultInputModes": ["text/plain", "application/json"],
    "defaultOutputModes": ["text/plain"],
    "skills": [
        {
            "id": "plan-trip",
            "name": "Plan a trip",
            "description": "Builds an itinerary",
            "tags": ["travel", "itinerary"],
            "examples": ["Plan three days in Rome"],
            "inputModes": ["text/plain"],
            "outputModes": ["application/json"],
            "securityRequirements": [{"schemes": {"oauth": {"list": ["trips:read"]}}}],
        },
        {"id": "book-hotel", "name": "Book a hotel", "description": "Books rooms", "tags": ["hotels"]},
    ],
}

V03_CARD = {
    "protocolVersion": "0.3.0",
    "name": "Recipe Agent",
    "description": "Helps with recipes",
    "url": "https://recipes.example.test/a2a",
    "preferredTransport": "JSONRPC",
    "additionalInterfaces": [
        {"url": "https://recipes.example.test/a2a", "transport": "JSONRPC"},
        {"url": "https://recipes.example.test/grpc", "transport": "GRPC"},
    ],
    "version": "1.0.0",
    "provider": {"organization": "Acme Kitchens", "url": "https://acme.example.test"},
    "capabilities": {"streaming": True, "pushNotifications": True, "stateTransitionHistory": True},
    "supportsAuthenticatedExtendedCard": True,
    "securitySchemes": {
        "jwt": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
        "key": {"type": "apiKey", "in": "query", "name": "api_key", "description": "A key"},
        "oauth": {
            "type": "oauth2",
            "flows": {
                "authorizationCode": {
                    "authorizationUrl": "https://auth.example.test/authorize",
                    "tokenUrl": "https://auth.example.test/token",
                    "scopes": {"recipes": "Read recipes"},
                }
            },
        },
        "oidc": {"type": "openIdConnect", "openIdConnectUrl": "https://auth.example.test/.well-known/openid"},
        "mtls": {"type": "mutualTLS"},
    },
    "security": [{"oauth": ["recipes"]}, {"jwt": []}],
    "defaultInputModes": ["text/plain"],
    "defaultOutputModes": ["text/plain", "image/png"],
    "skills": [
        {
            "id": "find-recipe",
            "name": "Find a recipe",
            "description": "Finds recipes by ingredient",
            "tags": ["cooking"],
            "examples": ["Find a vegan lasagna"],
            "inputModes": ["text/plain"],
            "outputModes": ["text/plain"],
        }
    ],
}


@pytest.fixture
def token(member, scope_factory, token_for):
    scope_factory("builders", group="builders", ui={"publish_agent": ["all"], "modify_service": ["all"]})
    return token_for(member("olivia", "builders"))


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def register(client, token, card):
    return client.post(
        reverse("agents-api:register"), card, content_type="application/json", headers=bearer(token)
    )


def card_of(client, token, path, **params):
    detail = reverse("agents-api:detail", kwargs={"agent_path": path})
    response = client.get(detail, params, headers=bearer(token))
    assert response.status_code == 200, response.json()
    return response.json()


def canonical(card: dict) -> dict:
    """A card as the a2a-sdk reads it (and refuses any field A2A v1.0 does not define)."""
    return MessageToDict(ParseDict(card, AgentCard()))


def test_the_fixtures_are_real_a2a_cards():
    ParseDict(V1_CARD, AgentCard())
    types_v03.AgentCard.model_validate(V03_CARD)


def test_a_v1_card_is_served_back_unchanged(client, token):
    response = register(client, token, V1_CARD | {"path": "/travel"})
    assert response.status_code == 201, response.json()

    served = card_of(client, token, "travel", format="a2a")

    assert served == V1_CARD
    assert canonical(served) == canonical(V1_CARD)


def test_a_v1_card_is_stored_in_the_registry_shape(client, token):
    register(client, token, V1_CARD | {"path": "/travel"})

    card = card_of(client, token, "travel")

    assert {key: card[key] for key in ("url", "provider", "provider_organization", "provider_url")} == {
        "url": "https://travel.example.test/a2a/v1",
        "provider": "google",
        "provider_organization": "Google",
        "provider_url": "https://provider.example.test",
    }
    assert (card["protocol_version"], card["preferred_transport"]) == ("1.0", "JSONRPC")
    assert card["interfaces"][2] == {
        "url": "https://travel.example.test/a2a/rest",
        "protocol_binding": "HTTP+JSON",
        "protocol_version": "1.0",
        "tenant": "acme",
    }
    assert card["capabilities"] == {
        "streaming": True,
        "push_notifications": False,
        "extended_agent_card": True,
        "extensions": V1_CARD["capabilities"]["extensions"],
    }
    assert card["security_schemes"] == {
        "jwt": {"type": "http", "description": "A JWT", "scheme": "Bearer", "bearer_format": "JWT"},
        "key": {"type": "api_key", "location": "header", "name": "X-API-Key"},
        "oauth": {
            "type": "oauth2",
            "flows": V1_CARD["securitySchemes"]["oauth"]["oauth2SecurityScheme"]["flows"],
            "oauth2_metadata_url": "https://auth.example.test/.well-known/oauth-authorization-server",
        },
        "oidc": {
            "type": "openid_connect",
            "open_id_connect_url": "https://auth.example.test/.well-known/openid-configuration",
        },
        "mtls": {"type": "mtls", "description": "Client certificates"},
    }
    assert card["security_requirements"] == [{"oauth": ["trips:read"]}, {"key": [], "mtls": []}]
    assert card["skills"][0] == {
        "id": "plan-trip",
        "name": "Plan a trip",
        "description": "Builds an itinerary",
        "tags": ["travel", "itinerary"],
        "examples": ["Plan three days in Rome"],
        "input_modes": ["text/plain"],
        "output_modes": ["application/json"],
        "security_requirements": [{"oauth": ["trips:read"]}],
    }
    assert (card["default_input_modes"], card["num_skills"], card["tags"]) == (
        ["text/plain", "application/json"],
        2,
        "",
    )


def test_a_v1_card_read_in_the_registry_shape_can_be_put_back_unchanged(client, token):
    register(client, token, V1_CARD | {"path": "/travel"})
    card = card_of(client, token, "travel")

    response = client.put(
        reverse("agents-api:detail", kwargs={"agent_path": "travel"}),
        card,
        content_type="application/json",
        headers=bearer(token),
    )

    assert response.status_code == 200
    assert response.json() == card
    assert card_of(client, token, "travel", format="a2a") == V1_CARD


def test_a_v03_card_comes_back_as_the_sdk_converts_it_to_v1(client, token):
    response = register(client, token, V03_CARD | {"path": "/recipes"})
    assert response.status_code == 201, response.json()

    served = canonical(card_of(client, token, "recipes", format="a2a"))
    expected = MessageToDict(to_core_agent_card(types_v03.AgentCard.model_validate(V03_CARD)))

    # The SDK lists the main url twice when additionalInterfaces repeats it (as v0.3 recommends) and
    # stamps "0.3" on the additional ones; the registry lists each endpoint once, with the card's version.
    assert served.pop("supportedInterfaces") == [
        {"url": "https://recipes.example.test/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "0.3.0"},
        {"url": "https://recipes.example.test/grpc", "protocolBinding": "GRPC", "protocolVersion": "0.3.0"},
    ]
    expected.pop("supportedInterfaces")
    assert served == expected


def test_a_v03_card_is_stored_in_the_registry_shape(client, token):
    register(client, token, V03_CARD | {"path": "/recipes"})

    card = card_of(client, token, "recipes")

    assert (card["url"], card["protocol_version"], card["preferred_transport"]) == (
        "https://recipes.example.test/a2a",
        "0.3.0",
        "JSONRPC",
    )
    assert card["interfaces"] == [
        {"url": "https://recipes.example.test/a2a", "protocol_binding": "JSONRPC"},
        {"url": "https://recipes.example.test/grpc", "protocol_binding": "GRPC"},
    ]
    assert card["provider"] == "other"
    assert card["capabilities"] == {
        "extended_agent_card": True,
        "streaming": True,
        "push_notifications": True,
    }
    assert card["security_schemes"]["key"] == {
        "type": "api_key",
        "description": "A key",
        "location": "query",
        "name": "api_key",
    }
    assert card["security_requirements"] == [{"oauth": ["recipes"]}, {"jwt": []}]


def test_a_registry_shaped_card_maps_onto_a2a(client, token):
    card = {
        "name": "Summarizer",
        "description": "Summarizes long documents",
        "path": "/summarizer",
        "url": "https://agents.example.test/summarizer",
        "version": "1.2.0",
        "provider": "anthropic",
        "security_schemes": {
            "token": {"type": "bearer", "description": "A registry token"},
            "basic": {"type": "basic"},
            "key": {"type": "api_key", "description": "Ask the team"},
            "sso": {"type": "saml", "description": "Not expressible in A2A"},
        },
        "skills": [
            {"name": "summarize", "description": "Summarize a document", "input_schema": {"type": "object"}}
        ],
        "tags": "nlp, summaries",
    }
    register(client, token, card)

    served = card_of(client, token, "summarizer", format="a2a")

    assert served == {
        "name": "Summarizer",
        "description": "Summarizes long documents",
        "version": "1.2.0",
        "supportedInterfaces": [
            {"url": "https://agents.example.test/summarizer", "protocolBinding": "JSONRPC"}
        ],
        "capabilities": {},
        "defaultInputModes": [],
        "defaultOutputModes": [],
        "skills": [
            {"id": "summarize", "name": "summarize", "description": "Summarize a document", "tags": []}
        ],
        "provider": {"organization": "Anthropic"},
        "securitySchemes": {
            "token": {"httpAuthSecurityScheme": {"description": "A registry token", "scheme": "Bearer"}},
            "basic": {"httpAuthSecurityScheme": {"scheme": "Basic"}},
            "key": {"apiKeySecurityScheme": {"description": "Ask the team"}},
        },
    }
    assert canonical(served)["skills"] == [
        {"id": "summarize", "name": "summarize", "description": "Summarize a document"}
    ]


def test_custom_and_other_providers_without_an_organization_show_no_provider(client, token):
    AgentFactory(path="/custom", provider="custom", owner=None, visibility="public")

    served = card_of(client, token, "custom", format="a2a")

    assert "provider" not in served
    canonical(served)


def test_a_hidden_agent_is_404_in_the_a2a_format_too(client, token, member):
    AgentFactory(path="/secret", visibility="private", owner=member("someone-else"))

    response = client.get(
        reverse("agents-api:detail", kwargs={"agent_path": "secret"}),
        {"format": "a2a"},
        headers=bearer(token),
    )

    assert response.status_code == 404


def test_a2a_field_errors_are_keyed_by_the_name_the_caller_used(client, token):
    card = copy.deepcopy(V1_CARD) | {"path": "/travel"}
    card["defaultInputModes"] = "text/plain"
    card["supportedInterfaces"][1] = {"url": "mailto:nobody@example.test", "protocolBinding": "GRPC"}
    card["securitySchemes"]["odd"] = {"httpAuthSecurityScheme": {}, "mtlsSecurityScheme": {}}
    card["capabilities"] = {"streaming": "yes"}

    response = register(client, token, card)

    assert response.status_code == 422
    assert response.json()["errors"] == {
        "defaultInputModes": ['Must be a list of at most 50 media types, e.g. ["text/plain"].'],
        "supportedInterfaces": [
            "Interface 1: 'url' must be an absolute URL (http, https, grpc, grpcs, ws, wss)."
        ],
        "securitySchemes": [
            "Scheme 'odd': an A2A v1.0 scheme holds exactly one of apiKeySecurityScheme, "
            "httpAuthSecurityScheme, oauth2SecurityScheme, openIdConnectSecurityScheme, mtlsSecurityScheme."
        ],
        "capabilities": ["'streaming' must be true or false."],
    }
    assert Agent.objects.count() == 0


def test_a_field_given_in_both_spellings_is_refused(client, token):
    card = V1_CARD | {"path": "/travel", "default_input_modes": ["text/plain"]}

    response = register(client, token, card)

    assert response.status_code == 422
    assert response.json()["errors"] == {
        "defaultInputModes": ["Given twice, as 'defaultInputModes' and as 'default_input_modes'."]
    }


def test_a_v1_card_without_url_or_interfaces_needs_a_url(client, token):
    card = {key: value for key, value in V1_CARD.items() if key != "supportedInterfaces"} | {
        "path": "/travel"
    }

    response = register(client, token, card)

    assert response.status_code == 422
    assert response.json()["errors"] == {"url": ["This field is required."]}


def test_skill_ids_must_be_unique(client, token):
    card = copy.deepcopy(V1_CARD) | {"path": "/travel"}
    card["skills"][1]["id"] = "plan-trip"

    response = register(client, token, card)

    assert response.status_code == 422
    assert response.json()["errors"] == {"skills": ["Skill ids must be unique."]}


def test_json_edited_in_the_admin_without_checks_still_serves_a_parseable_card(client, token):
    AgentFactory(
        path="/hand-edited",
        skills=[{"description": "no name"}, "text", {"name": "ok", "description": "fine"}],
        interfaces=[{"url": "https://a.example.test"}, 7],
        capabilities=["streaming"],
        security_schemes={"broken": "bearer", "fine": {"type": "mtls"}},
        security_requirements={"fine": []},
    )

    served = card_of(client, token, "hand-edited", format="a2a")

    assert [skill["name"] for skill in served["skills"]] == ["ok"]
    assert len(served["supportedInterfaces"]) == 1
    assert served["capabilities"] == {}
    assert served["securitySchemes"] == {"fine": {"mtlsSecurityScheme": {}}}
    assert "securityRequirements" not in served
    canonical(served)


@pytest.mark.parametrize(
    "scheme",
    [
        {
            "type": "oauth2",
            "flows": {
                "authorizationCode": {
                    "authorizationUrl": "javascript:alert(1)",
                    "tokenUrl": "https://t.example/token",
                    "scopes": {},
                }
            },
        },
        {"type": "openIdConnect", "openIdConnectUrl": "javascript:alert(1)"},
    ],
)
def test_script_links_in_security_schemes_are_refused(scheme):
    with pytest.raises(Invalid):
        read_scheme(scheme)


def test_script_links_as_extension_uris_are_refused():
    with pytest.raises(Invalid):
        _read_extension({"uri": " JavaScript:alert(1)"})
