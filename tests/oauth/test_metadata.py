"""Discovery: protected resource metadata (RFC 9728) of every gateway URL and of the registry, the
authorization server's metadata (RFC 8414), and the gateway's 401 that points at them."""

import pytest

pytestmark = pytest.mark.django_db

BASE = "http://testserver"


def test_every_gateway_url_has_protected_resource_metadata(client):
    response = client.get("/.well-known/oauth-protected-resource/team/weather/mcp")

    assert response.status_code == 200
    assert response.json() == {
        "resource": f"{BASE}/team/weather/mcp",
        "authorization_servers": [BASE],
        "scopes_supported": ["mcp"],
        "bearer_methods_supported": ["header"],
        "resource_name": "MCP Gateway Registry",
    }
    assert response["Access-Control-Allow-Origin"] == "*"


def test_the_registry_api_has_its_own_resource_metadata(client):
    response = client.get("/.well-known/oauth-protected-resource")

    assert response.status_code == 200
    assert (response.json()["resource"], response.json()["scopes_supported"]) == (BASE, ["registry"])


@pytest.mark.parametrize(
    "suffix", ["/alpha", "/alpha/messages", "/Alpha/../beta/mcp", "/a/b/c/tools", "/al pha/mcp"]
)
def test_metadata_of_what_is_no_resource_is_404(client, suffix):
    response = client.get(f"/.well-known/oauth-protected-resource{suffix}")

    assert response.status_code == 404
    assert response.json()["error"] == "invalid_target"


def test_authorization_server_metadata(client):
    response = client.get("/.well-known/oauth-authorization-server")

    assert response.status_code == 200
    body = response.json()
    assert {key: body[key] for key in sorted(body) if key.endswith("_endpoint") or key == "issuer"} == {
        "authorization_endpoint": f"{BASE}/oauth/authorize",
        "issuer": BASE,
        "registration_endpoint": f"{BASE}/oauth/register",
        "revocation_endpoint": f"{BASE}/oauth/revoke",
        "token_endpoint": f"{BASE}/oauth/token",
    }
    assert body["code_challenge_methods_supported"] == ["S256"]
    assert body["client_id_metadata_document_supported"] is True
    assert body["grant_types_supported"] == [
        "authorization_code",
        "refresh_token",
        "urn:ietf:params:oauth:grant-type:jwt-bearer",
    ]
    assert body["authorization_grant_profiles_supported"] == ["urn:ietf:params:oauth:grant-profile:id-jag"]
    assert body["response_types_supported"] == ["code"]
    assert body["authorization_response_iss_parameter_supported"] is True


def test_the_issuer_is_the_public_url_when_one_is_set(client, settings):
    settings.GATEWAY_PUBLIC_URL = "https://registry.example.com"
    settings.OAUTH2_PROVIDER = {
        **settings.OAUTH2_PROVIDER,
        "OIDC_ISS_ENDPOINT": "https://registry.example.com",
    }

    metadata = client.get("/.well-known/oauth-protected-resource/alpha/mcp").json()
    server = client.get("/.well-known/oauth-authorization-server").json()

    assert metadata["resource"] == "https://registry.example.com/alpha/mcp"
    assert metadata["authorization_servers"] == [server["issuer"]] == ["https://registry.example.com"]
    assert server["token_endpoint"] == "https://registry.example.com/oauth/token"
