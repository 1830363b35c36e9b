"""Who the registry is to an upstream authorization server: its own Client ID Metadata Document when the
server supports them (and the registry is on https), else a dynamic registration, made once per issuer.
The upstream here is a real authorization server: this registry's own, on loopback."""

import pytest
from oauth2_provider.models import Application

from connections.models import UpstreamClient
from connections.oauth.client import client_metadata, identity_for
from connections.oauth.discovery import UpstreamAuthorization, UpstreamOAuthRefused
from oauth.clients import client_metadata_check
from tests.gateway.gateway_calls import gateway_fixture  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

BASE = "http://127.0.0.1:8123"


def upstream(gateway, **changes) -> UpstreamAuthorization:
    fields = {
        "resource": gateway.url("/alpha/mcp"),
        "scopes": ("mcp",),
        "issuer": gateway.url(""),
        "authorization_endpoint": gateway.url("/oauth/authorize"),
        "token_endpoint": gateway.url("/oauth/token"),
        "registration_endpoint": gateway.url("/oauth/register"),
        "revocation_endpoint": None,
        "client_id_metadata_document_supported": False,
        "iss_parameter_supported": True,
    }
    return UpstreamAuthorization(**{**fields, **changes})


@pytest.fixture
def loopback_upstreams(settings):
    settings.UPSTREAM_OAUTH_ALLOW_LOOPBACK = True


def test_the_metadata_document_is_served_at_its_own_url_and_passes_an_authorization_servers_rule(
    client, settings
):
    settings.GATEWAY_PUBLIC_URL = "https://registry.example.com"

    answer = client.get("/connections/oauth/client.json")

    document = answer.json()
    assert answer.status_code == 200
    assert document["client_id"] == "https://registry.example.com/connections/oauth/client.json"
    assert document["redirect_uris"] == ["https://registry.example.com/connections/oauth/callback"]
    assert document["token_endpoint_auth_method"] == "none"
    client_metadata_check(document)  # the registry's own rule for client metadata accepts it


def test_an_https_registry_names_itself_by_its_document_when_the_server_supports_them(gateway):
    identity = identity_for(
        upstream(gateway, client_id_metadata_document_supported=True),
        server_url=gateway.url("/alpha/mcp"),
        base="https://registry.example.com",
    )

    assert (identity.client_id, identity.client_secret, identity.how) == (
        "https://registry.example.com/connections/oauth/client.json",
        None,
        "metadata document",
    )
    assert UpstreamClient.objects.count() == 0


def test_otherwise_it_registers_once_per_issuer_and_the_server_knows_the_client(gateway, loopback_upstreams):
    authorization = upstream(gateway)

    first = identity_for(authorization, server_url=gateway.url("/alpha/mcp"), base=BASE)
    again = identity_for(authorization, server_url=gateway.url("/beta/mcp"), base=BASE)

    registered = Application.objects.get(client_id=first.client_id)
    assert (first.how, again) == ("registration", first)
    assert registered.redirect_uris == f"{BASE}/connections/oauth/callback"
    assert registered.name == client_metadata(BASE)["client_name"]
    assert UpstreamClient.objects.count() == 1


def test_a_refused_registration_says_why(gateway, loopback_upstreams):
    with pytest.raises(UpstreamOAuthRefused) as refused:
        identity_for(
            upstream(gateway), server_url=gateway.url("/alpha/mcp"), base="http://registry.example.com"
        )

    assert str(refused.value).startswith("The authorization server refused the registration (400): ")
    assert UpstreamClient.objects.count() == 0


def test_a_server_without_documents_or_registration_is_refused(gateway):
    with pytest.raises(UpstreamOAuthRefused, match="accepts neither client metadata documents"):
        identity_for(
            upstream(gateway, registration_endpoint=None), server_url=gateway.url("/alpha/mcp"), base=BASE
        )
