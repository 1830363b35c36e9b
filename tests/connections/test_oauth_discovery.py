"""Discovering an upstream server's sign-in as an MCP client does (its 401, RFC 9728, RFC 8414), and
refusing, with a reason an operator can act on, whatever a hostile or broken upstream serves instead."""

import json

import pytest
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

from connections.oauth.discovery import UpstreamOAuthRefused, discover
from core.outbound import AddressRefused, addresses_to_reach
from tests.mcp_servers import UvicornThread, loopback_socket


class Party:
    """A loopback HTTP server answering each path with what the test put there."""

    def __init__(self):
        self.answers: dict[str, tuple[int, dict, bytes]] = {}
        app = Starlette(routes=[Route("/{path:path}", self.answer, methods=["GET", "POST"])])
        self.running = UvicornThread(app, loopback_socket()).start()
        self.base = self.running.url("")

    async def answer(self, request):
        status, headers, body = self.answers.get(request.url.path, (404, {}, b"not here"))
        return Response(body, status_code=status, headers=headers)

    def put(self, path: str, document, status: int = 200, headers: dict | None = None) -> None:
        body = document if isinstance(document, bytes) else json.dumps(document).encode()
        self.answers[path] = (status, {"Content-Type": "application/json", **(headers or {})}, body)


@pytest.fixture
def parties(settings):
    settings.UPSTREAM_OAUTH_ALLOW_LOOPBACK = True
    server, authority = Party(), Party()
    yield server, authority
    server.running.stop()
    authority.running.stop()


def well_behaved(
    server: Party, authority: Party, *, prm: dict | None = None, metadata: dict | None = None
) -> str:
    """A server whose 401 names its metadata and a scope, and an authorization server of its own."""
    url = f"{server.base}/mcp"
    server.put(
        "/mcp",
        {"error": "unauthorized"},
        status=401,
        headers={
            "WWW-Authenticate": "Bearer "
            f'resource_metadata="{server.base}/.well-known/oauth-protected-resource/mcp", scope="files:read"'
        },
    )
    server.put(
        "/.well-known/oauth-protected-resource/mcp",
        {"resource": url, "authorization_servers": [authority.base], **(prm or {})},
    )
    authority.put(
        "/.well-known/oauth-authorization-server",
        {
            "issuer": authority.base,
            "authorization_endpoint": f"{authority.base}/authorize",
            "token_endpoint": f"{authority.base}/token",
            "registration_endpoint": f"{authority.base}/register",
            "code_challenge_methods_supported": ["S256"],
            "client_id_metadata_document_supported": True,
            "authorization_response_iss_parameter_supported": True,
            **(metadata or {}),
        },
    )
    return url


def refusal(url: str) -> str:
    with pytest.raises(UpstreamOAuthRefused) as refused:
        discover(url)
    return str(refused.value)


def test_a_well_behaved_upstream_is_discovered_from_its_401(parties):
    server, authority = parties
    url = well_behaved(server, authority)

    found = discover(url)

    assert (found.resource, found.scopes, found.issuer) == (url, ("files:read",), authority.base)
    assert (found.authorization_endpoint, found.token_endpoint) == (
        f"{authority.base}/authorize",
        f"{authority.base}/token",
    )
    assert (found.client_id_metadata_document_supported, found.iss_parameter_supported) == (True, True)


def test_without_the_401_header_the_well_known_uri_is_used(parties):
    server, authority = parties
    url = well_behaved(server, authority)
    server.put("/mcp", {"error": "unauthorized"}, status=401)

    assert discover(url).issuer == authority.base


def test_an_issuer_that_is_not_the_url_it_was_found_by_is_refused(parties):
    server, authority = parties
    url = well_behaved(server, authority, metadata={"issuer": "https://login.example.com"})

    assert refusal(url) == (
        "The authorization server's metadata names the issuer https://login.example.com, "
        f"not {authority.base} it was found by."
    )


def test_metadata_naming_another_resource_or_served_from_another_host_is_refused(parties):
    server, authority = parties
    url = well_behaved(server, authority, prm={"resource": "https://elsewhere.example.com/mcp"})
    other = refusal(url)
    server.put(
        "/mcp",
        {},
        status=401,
        headers={"WWW-Authenticate": f'Bearer resource_metadata="{authority.base}/prm"'},
    )

    assert other == (
        f"The protected-resource metadata names https://elsewhere.example.com/mcp as its resource, not {url}."
    )
    assert refusal(url) == (
        f"The protected-resource metadata is at {authority.base}/prm, on another host than {url}."
    )


def test_an_authorization_server_without_s256_or_over_http_is_refused(parties, settings):
    server, authority = parties
    url = well_behaved(server, authority, metadata={"code_challenge_methods_supported": ["plain"]})
    no_pkce = refusal(url)
    well_behaved(server, authority)
    settings.UPSTREAM_OAUTH_ALLOW_LOOPBACK = False

    assert no_pkce == "The authorization server does not offer PKCE with S256."
    assert refusal(url) == (
        f"The authorization server metadata {authority.base}/.well-known/oauth-authorization-server is not "
        "https."
    )


def test_an_authorization_server_on_a_private_address_is_refused_unless_listed(parties):
    server, authority = parties
    url = well_behaved(server, authority, prm={"authorization_servers": ["https://10.255.255.1"]})

    assert refusal(url) == (
        "The authorization server metadata at https://10.255.255.1/.well-known/oauth-authorization-server "
        "is not reachable: 10.255.255.1 resolves to an address that is not public and is not on the "
        "allowed list."
    )


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"x" * (64 * 1024 + 1), "did not answer usably: the answer is larger than 65536 bytes."),
        (b"[" * 200 + b"]" * 200, "is not usable: JSON is nested deeper than 64 levels."),
        (
            b"{not json",
            "is not usable: Not valid JSON: Expecting property name enclosed in double quotes: line 1 "
            "column 2 (char 1).",
        ),
        (
            json.dumps({"resource": "https://a.example/mcp"}).encode(),
            "is not valid: authorization_servers: Field required.",
        ),
    ],
)
def test_oversized_deep_or_broken_metadata_is_refused_with_its_reason(parties, body, reason):
    server, authority = parties
    url = well_behaved(server, authority)
    server.put("/.well-known/oauth-protected-resource/mcp", body)

    assert refusal(url).endswith(reason)


def test_the_address_rule_lets_listed_private_hosts_and_loopback_only_when_asked():
    assert addresses_to_reach("10.255.255.1", 443, allowed_hosts=["10.255.255.1"]) == ["10.255.255.1"]
    assert addresses_to_reach("127.0.0.1", 443, allow_loopback=True) == ["127.0.0.1"]
    with pytest.raises(AddressRefused, match="not public and is not on the allowed list"):
        addresses_to_reach("127.0.0.1", 443)
    with pytest.raises(AddressRefused, match="does not resolve"):
        addresses_to_reach("no-such-host.invalid", 443)
