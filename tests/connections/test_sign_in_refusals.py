"""A server users sign in to refusing a caller's sign-in, through the gateway: a 403 asking for more scope
asks the caller to sign in again (and the next sign-in asks for that scope too), a 401 with nothing to
refresh removes the connection and asks again, and a server's own refusal of a call passes as it is.
The server is the SDK's bearer-protected MCP server (tests/mcp_servers.py)."""

import json

import pytest
from multidict import CIMultiDict

from accounts.choices import AuditAction, AuthMethod
from accounts.models import AuditEvent
from accounts.principal import principal_for_user
from connections.choices import Purpose
from connections.models import UpstreamCredential
from connections.oauth.flow import SignedIn
from connections.oauth.tokens import Grant
from connections.services import credential_signed_in
from gateway.sign_in import sign_in_refused
from tests.factories import ServerFactory
from tests.gateway.gateway_calls import INITIALIZE, gateway_fixture, post, sse_messages  # noqa: F401
from tests.mcp_servers import AUTH_TOKEN, UNSCOPED_TOKEN, auth_server_fixture  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

CALL = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1}}}


@pytest.fixture
def signed_in_server(auth_server, settings, scope_factory):
    settings.UPSTREAM_OAUTH_ALLOW_LOOPBACK = True
    scope_factory("all", group="users", server_rules=[{"server": "*", "methods": ["*"], "tools": ["*"]}])
    return ServerFactory(path="/signed", proxy_pass_url=auth_server, upstream_auth="user_oauth")


def connect(server, user, access_token: str, scopes: str = "mcp"):
    """A stored sign-in as a completed one stores it (no token endpoint: nothing can be refreshed)."""
    values = {
        "client_id": "registry",
        "client_secret": None,
        "token_endpoint": "http://127.0.0.1:9/token",
        "revocation_endpoint": None,
        "issuer": "http://127.0.0.1:9",
        "resource": server.proxy_pass_url,
    }
    signed_in = SignedIn(
        server.proxy_pass_url,
        "server",
        server.pk,
        user.pk,
        Purpose.USER,
        values,
        Grant(access_token, None, None, scopes),
    )
    principal = principal_for_user(user, auth_method=AuthMethod.SESSION)
    return credential_signed_in(actor=principal, user=user, signed_in=signed_in)


def ask_of(answer: dict) -> str:
    assert answer["error"]["code"] == -32042
    [elicitation] = answer["error"]["data"]["elicitations"]
    return elicitation["message"]


def test_a_signed_in_call_carries_the_users_access_token(gateway, signed_in_server, member, token_for):
    user = member("sia", "users")
    connect(signed_in_server, user, AUTH_TOKEN)

    status, _, body = post(gateway.port, "/signed/mcp", INITIALIZE, _headers(token_for(user)))

    assert status == 200
    [answer] = sse_messages(body)
    assert answer["result"]["serverInfo"]["name"] == "Protected Time"


def test_a_403_asking_for_more_scope_asks_the_caller_to_sign_in_again(
    gateway, signed_in_server, member, token_for
):
    user = member("sid", "users")
    connect(signed_in_server, user, UNSCOPED_TOKEN)

    status, _, body = post(gateway.port, "/signed/mcp", CALL, _headers(token_for(user)))

    assert status == 200
    assert ask_of(json.loads(body)) == (
        "/signed needs more permission than your sign-in gave (a larger scope): "
        "sign in again, then try again."
    )
    assert UpstreamCredential.objects.filter(user=user).exists()  # kept: it may still do other things


def test_a_401_with_nothing_to_refresh_removes_the_sign_in_and_asks_again(
    gateway, signed_in_server, member, token_for
):
    user = member("sil", "users")
    connect(signed_in_server, user, "a-token-the-server-no-longer-knows")

    status, _, body = post(gateway.port, "/signed/mcp", CALL, _headers(token_for(user)))

    assert status == 200
    assert ask_of(json.loads(body)) == ("Your sign-in to /signed has ended: sign in again, then try again.")
    assert not UpstreamCredential.objects.filter(user=user).exists()
    [failed] = AuditEvent.objects.filter(action=AuditAction.CONNECTION_REFRESH_FAILED)
    assert failed.detail["reason"] == "The sign-in has expired and the server gave no refresh token."


WIDER = "files:read files:write"


class Answer:
    def __init__(self, status: int, challenge: str | None):
        self.status = status
        self.headers = CIMultiDict({"WWW-Authenticate": challenge} if challenge else {})


@pytest.mark.parametrize(
    ("mode", "status", "challenge", "expected"),
    [
        ("user_oauth", 401, 'Bearer resource_metadata="https://x/.well-known"', (401, "")),
        (
            "user_oauth",
            403,
            'Bearer error="insufficient_scope", scope="files:read files:write"',
            (403, "files:read files:write"),
        ),
        ("user_oauth", 403, 'Bearer error="insufficient_scope", scope="a\x01b c"', (403, "a b c")),
        ("user_oauth", 403, None, None),  # a refusal of the call itself
        ("user_oauth", 403, 'Bearer error="invalid_token"', None),
        ("user_secret", 401, "Bearer", None),
        ("shared_headers", 403, 'Bearer error="insufficient_scope"', None),
    ],
)
def test_only_a_refused_sign_in_is_taken_for_one(mode, status, challenge, expected):
    server = ServerFactory.build(upstream_auth=mode)

    refused = sign_in_refused(server, Answer(status, challenge))

    assert (None if refused is None else (refused.status, refused.scope)) == expected


def test_the_next_sign_in_asks_for_the_scope_the_server_wanted(signed_in_server, member):
    from connections.oauth.flow import _scopes_wanted
    from connections.services import credential_step_up

    user = member("sis", "users")
    credential = connect(signed_in_server, user, UNSCOPED_TOKEN, scopes="mcp files:read")
    credential_step_up(credential=credential, scopes="files:write files:read")

    assert _scopes_wanted(signed_in_server, user, Purpose.USER, ("mcp",)) == [
        "mcp",
        "files:read",
        "files:write",
    ]


def _headers(token: str) -> dict:
    return {"Authorization": f"Bearer {token}", "MCP-Protocol-Version": "2025-11-25"}
