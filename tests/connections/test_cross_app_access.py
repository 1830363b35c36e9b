"""Cross-app access end to end, every party real and on loopback: the company's identity provider
(oidc-provider from npm, doing RFC 8693 token exchange for identity assertions), this registry (its
gateway, its users logging in through that provider), and a second instance of the registry as the
upstream's authorization server and MCP gateway (in front of a real MCP server), reached through a
recording proxy that notes every request that goes out to it.

A user who logged in to the registry with their company identity calls a server in the `cross_app_access`
mode: the registry exchanges their login at the identity provider for an ID-JAG naming the upstream, and
the ID-JAG for an access token at the upstream (`jwt-bearer`), with no page in between. Concurrent calls
make one exchange; a token the upstream refuses is exchanged again once; a stronger login the provider
asks for becomes the in-protocol ask; the upstream never sees the caller's registry token. The same
provider's assertions are also taken by this registry's own token endpoint (an MCP host's side)."""

import json

import anyio
import httpx
import jwt
import psycopg
import pytest
import requests
from a2a.client import ClientConfig, create_client
from a2a.types import TaskState
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth.models import Group
from mcp.shared.exceptions import MCPError
from oauth2_provider.models import Application

from accounts.choices import AuditAction
from accounts.models import AuditEvent, ProviderSignIn
from connections.models import UpstreamCredential
from connections.sealed import open_for
from oauth.models import TrustedIssuer
from tests.a2a_agents import echo_agent, last_task
from tests.conformance.suite import BearerProxy
from tests.conftest import unused_port
from tests.connections.upstream import start_upstream, stop_peer
from tests.factories import AgentFactory, ServerFactory
from tests.gateway.gateway_calls import run
from tests.mcp_servers import UvicornThread, loopback_socket, time_server_fixture  # noqa: F401
from tests.oauth.flow import loopback_certificate
from tests.oidc.harness import drive_login, start_provider

pytestmark = pytest.mark.django_db(transaction=True)

CLIENT_ID, CLIENT_SECRET, PASSWORD = "registry", "registry-secret-for-tests", "op-password"
AT_UPSTREAM = "downstream-registry"  # the client the identity provider names at the upstream
HOST_CLIENT = "enterprise-host"  # an MCP host of this registry's, for its own side
ACCOUNTS = {
    "alice": {"email": "alice-up@example.test", "preferred_username": "alice"},
    "bob": {"email": "bob-up@example.test", "preferred_username": "bob"},
}

UPSTREAM_SETUP = """
from oauth2_provider.models import Application
from oauth.models import TrustedIssuer
TrustedIssuer.objects.create(issuer={issuer!r}, jwks_url={jwks!r}, user_claim="email")
Application.objects.create(
    name="Downstream registry", client_id={client!r}, client_type="public",
    authorization_grant_type="authorization-code", redirect_uris="http://127.0.0.1/cb",
)
"""


@pytest.fixture(scope="module")
def lab(django_db_setup, django_db_blocker, tmp_path_factory, time_server):
    """(this registry's gateway, the identity provider, the upstream, the proxy in front of it); the
    upstream fronts a real MCP server at `/clock` and a real a2a-sdk agent at `/helper`."""
    from registry_site.asgi import application

    helper = echo_agent()
    gateway = UvicornThread(application, loopback_socket()).start()
    proxy = BearerProxy("http://127.0.0.1:9")  # its target is the upstream, once started
    proxied = UvicornThread(proxy, loopback_socket()).start()
    base = gateway.url("")
    provider = start_provider(
        port=unused_port(),
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        redirect_uri=f"{base}/accounts/oidc/oidc/login/callback/",
        accounts=ACCOUNTS,
        password=PASSWORD,
        id_jag_clients={proxied.url(""): AT_UPSTREAM, base: HOST_CLIENT},
        step_up=["bob"],
    )
    certificate, _ = loopback_certificate(tmp_path_factory.mktemp("tls"))
    with django_db_blocker.unblock():
        upstream, group, name = start_upstream(
            tmp_path_factory.mktemp("upstream"),
            clock_url=time_server,
            certificate=certificate,
            agent_url=helper.url("/"),
            env={"GATEWAY_PUBLIC_URL": proxied.url(""), "UPSTREAM_OAUTH_ALLOW_LOOPBACK": "true"},
            more_setup=UPSTREAM_SETUP.format(
                issuer=provider.issuer, jwks=provider.jwks_uri, client=AT_UPSTREAM
            ),
        )
    proxy.target = upstream.url
    try:
        yield gateway, provider, upstream, proxy
    finally:
        with django_db_blocker.unblock():
            stop_peer(group, name)
        provider.stop()
        proxied.stop()
        gateway.stop()
        helper.stop()


@pytest.fixture
def crossing(lab, settings, scope_factory):
    """This registry configured for the lab: logins through the provider kept, the upstream's server at
    `/upclock` in the cross-app access mode, every user allowed it."""
    gateway, provider, upstream, proxy = lab
    settings.SOCIALACCOUNT_PROVIDERS = {
        "openid_connect": {
            "APPS": [
                {
                    "provider_id": "oidc",
                    "name": "Corp SSO",
                    "client_id": CLIENT_ID,
                    "secret": CLIENT_SECRET,
                    "settings": {"server_url": provider.issuer},
                }
            ],
            "SCOPE": ["openid", "profile", "email"],
            "OAUTH_PKCE_ENABLED": True,
        }
    }
    settings.CROSS_APP_ACCESS_ENABLED = True
    settings.UPSTREAM_OAUTH_ALLOW_LOOPBACK = True
    scope_factory("all", group="users", server_rules=[{"server": "*", "methods": ["*"], "tools": ["*"]}])
    ServerFactory(
        path="/upclock",
        name="Up Clock",
        proxy_pass_url=f"{proxy_url(lab)}/clock/mcp",
        upstream_auth="cross_app_access",
    )
    proxy.seen.clear()
    yield lab
    upstream.shell(
        "from oauth2_provider.models import AccessToken\n"
        "AccessToken.objects.filter(user__isnull=False).delete()"
    )


def proxy_url(lab) -> str:
    return lab[2].env["GATEWAY_PUBLIC_URL"]


def logged_in(lab, login: str, token_for) -> str:
    """`login` logs in to this registry through the identity provider; a registry token of theirs."""
    gateway, *_ = lab
    session = requests.Session()
    start = session.get(gateway.url("/api/auth/auth/oidc"), timeout=15)
    drive_login(session, start, login=login, password=PASSWORD)
    user = SocialAccount.objects.get(uid=login).user
    user.groups.add(Group.objects.get(name="users"))
    return token_for(user)


async def add(client) -> str:
    return (await client.call_tool("add", {"a": 2, "b": 3})).content[0].text


async def asked(client):
    try:
        await client.call_tool("add", {"a": 2, "b": 3})
    except MCPError as error:
        return error.error
    raise AssertionError("the call was not asked for a login")


def bearer_tokens_seen(proxy) -> set[str]:
    return {
        headers[b"authorization"].decode().removeprefix("Bearer ")
        for _, _, headers, _ in proxy.seen
        if b"authorization" in headers
    }


def jwt_bearer_posts(proxy) -> int:
    return sum(
        1
        for method, path, _, body in proxy.seen
        if (method, path) == ("POST", "/oauth/token") and b"grant-type%3Ajwt-bearer" in body
    )


def upstream_tokens_of(lab, username: str) -> int:
    with psycopg.connect(lab[2].database_url) as database:
        return database.execute(
            "SELECT count(*) FROM oauth2_provider_accesstoken t JOIN accounts_user u ON u.id = t.user_id "
            "WHERE u.username = %s",
            (username,),
        ).fetchone()[0]


def test_a_login_through_the_identity_provider_reaches_the_upstream_as_the_same_person_with_one_exchange(
    crossing, token_for
):
    gateway, provider, upstream, proxy = crossing
    token = logged_in(crossing, "alice", token_for)
    before = len(provider.exchanges())

    async def twice():
        answers = []

        async def one():
            answers.append(
                await anyio.to_thread.run_sync(lambda: run(gateway.url("/upclock/mcp"), token, add))
            )

        async with anyio.create_task_group() as group:
            group.start_soon(one)
            group.start_soon(one)
        return answers

    answers = anyio.run(twice)

    credential = UpstreamCredential.objects.get(user__socialaccount__uid="alice")
    minted = open_for(credential, credential.target)["access_token"]
    assert answers == ["5", "5"]
    assert provider.exchanges()[before:] == [f"alice {proxy_url(crossing)} {proxy_url(crossing)}/clock/mcp"]
    assert jwt_bearer_posts(proxy) == 1
    assert upstream.user_of(minted) == "alice-up"
    assert upstream_tokens_of(crossing, "alice-up") == 1
    assert bearer_tokens_seen(proxy) == {minted}  # never the caller's registry token
    assert token not in json.dumps([body.decode("latin-1") for *_, body in proxy.seen])
    assert credential.mode == "cross_app_access"
    event = AuditEvent.objects.get(action=AuditAction.CONNECTION_CROSS_APP)
    assert (event.target, event.detail["identity_provider"], event.detail["authorization_server"]) == (
        "server:/upclock",
        provider.issuer,
        proxy_url(crossing),
    )
    assert minted not in json.dumps(list(AuditEvent.objects.values_list("detail", flat=True)))


def test_a_token_the_upstream_refuses_is_exchanged_again_once(crossing, token_for):
    gateway, provider, upstream, proxy = crossing
    token = logged_in(crossing, "alice", token_for)
    assert run(gateway.url("/upclock/mcp"), token, add) == "5"
    upstream.shell(
        "from oauth2_provider.models import AccessToken\n"
        "AccessToken.objects.filter(user__username='alice-up').delete()"
    )
    before = len(provider.exchanges())

    again = run(gateway.url("/upclock/mcp"), token, add)

    assert again == "5"
    assert len(provider.exchanges()) == before + 1
    assert jwt_bearer_posts(proxy) == 2
    assert upstream_tokens_of(crossing, "alice-up") == 1


def test_a_stronger_login_the_identity_provider_asks_for_is_the_in_protocol_ask(crossing, token_for):
    gateway, provider, upstream, proxy = crossing
    token = logged_in(crossing, "bob", token_for)

    error = run(gateway.url("/upclock/mcp"), token, asked)

    assert error.code == -32042
    assert error.data["elicitations"][0]["url"] == gateway.url("/api/auth/auth/oidc")
    assert "needs a stronger login at your identity provider" in error.data["elicitations"][0]["message"]
    assert jwt_bearer_posts(proxy) == 0
    refused = AuditEvent.objects.get(action=AuditAction.CONNECTION_CROSS_APP_REFUSED)
    assert refused.detail == {"reason": "The authorization server refused: a stronger login is required"}


def test_a_caller_without_a_kept_login_is_asked_to_log_in_and_nothing_goes_out(crossing, member, token_for):
    gateway, provider, upstream, proxy = crossing
    token = token_for(member("local-lucy", "users"))

    error = run(gateway.url("/upclock/mcp"), token, asked)

    assert (error.code, error.data["elicitations"][0]["url"]) == (-32042, gateway.url("/login"))
    assert proxy.seen == []


def test_the_login_kept_is_sealed_and_the_same_providers_assertion_gets_a_host_a_token_here(
    crossing, token_for
):
    gateway, provider, upstream, proxy = crossing
    logged_in(crossing, "alice", token_for)
    sign_in = ProviderSignIn.objects.get(user__socialaccount__uid="alice")
    kept = sign_in.opened()
    assert kept["id_token"] not in sign_in.sealed
    assert jwt.decode(kept["id_token"], options={"verify_signature": False})["sub"] == "alice"
    Application.objects.create(
        name="Enterprise host",
        client_id=HOST_CLIENT,
        client_type="public",
        authorization_grant_type="authorization-code",
        redirect_uris="http://127.0.0.1/cb",
    )
    TrustedIssuer.objects.create(issuer=provider.issuer, jwks_url=provider.jwks_uri)

    exchanged = requests.post(
        provider.token_endpoint,
        data={
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "audience": gateway.url(""),
            "resource": gateway.url("/upclock/mcp"),
            "subject_token": kept["id_token"],
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        },
        auth=(CLIENT_ID, CLIENT_SECRET),
        timeout=15,
    ).json()
    granted = requests.post(
        gateway.url("/oauth/token"),
        data={
            "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
            "assertion": exchanged["access_token"],
            "client_id": HOST_CLIENT,
        },
        timeout=15,
    )

    assert (granted.status_code, granted.json()["scope"]) == (200, "mcp"), granted.text
    assert run(gateway.url("/upclock/mcp"), granted.json()["access_token"], add) == "5"


def test_an_agent_in_the_mode_is_reached_the_same_way_through_the_one_resolver(crossing, token_for):
    gateway, provider, upstream, proxy = crossing
    agent = AgentFactory(
        path="/upagent",
        name="Up Agent",
        url=f"{proxy_url(crossing)}/helper/a2a",
        preferred_transport="JSONRPC",
        protocol_version="1.0",
        capabilities={"streaming": True},
        visibility="public",
        is_enabled=True,
        upstream_auth="cross_app_access",
    )
    token = logged_in(crossing, "alice", token_for)
    before = len(provider.exchanges())

    async def message():
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=40) as http:
            client = await create_client(
                gateway.url("/upagent/a2a"), client_config=ClientConfig(httpx_client=http, streaming=False)
            )
            async with client:
                return await last_task(client, "hello")

    answered = anyio.run(message)

    assert answered.status.state == TaskState.TASK_STATE_COMPLETED
    assert answered.artifacts[0].parts[0].text == "echo: hello"
    assert provider.exchanges()[before:] == [f"alice {proxy_url(crossing)} {proxy_url(crossing)}/helper/a2a"]
    credential = UpstreamCredential.objects.get(agent=agent)
    assert upstream.user_of(open_for(credential, agent)["access_token"]) == "alice-up"
