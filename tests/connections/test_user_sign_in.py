"""Servers users sign in to (`user_oauth`), end to end: the upstream is a second instance of this registry
(tests/connections/upstream.py) whose gateway fronts a real MCP server and whose authorization server
issues the tokens. The official SDK client makes a call, is asked in-band with a URL, the user follows
it in Chromium (our page, then the upstream's login and consent), and the retried call succeeds, acting
upstream as that user. The registry names itself by its Client ID Metadata Document when served over
https, and registers dynamically otherwise."""

import ssl
from datetime import timedelta

import anyio
import httpx2
import pytest
from django.utils import timezone
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from accounts.choices import AuditAction, AuthMethod
from accounts.models import AuditEvent, User
from accounts.principal import principal_for_user
from connections.models import UpstreamClient, UpstreamCredential
from connections.resolver import headers_for
from tests.connections.upstream import open_as, secure_gateway_fixture, sign_in, start_upstream, stop_peer  # noqa: F401
from tests.factories import ServerFactory
from tests.gateway.gateway_calls import gateway_fixture  # noqa: F401
from tests.mcp_servers import UvicornThread, loopback_socket, time_server_fixture  # noqa: F401
from tests.oauth.flow import loopback_certificate
from virtual_servers.services import virtual_server_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    return loopback_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def upstream(django_db_setup, django_db_blocker, tmp_path_factory, time_server, certificate):
    with django_db_blocker.unblock():
        started, group, name = start_upstream(
            tmp_path_factory.mktemp("upstream"), clock_url=time_server, certificate=certificate[0]
        )
        try:
            yield started
        finally:
            stop_peer(group, name)


@pytest.fixture
def upclock(upstream, settings, member, token_for, scope_factory):
    settings.UPSTREAM_OAUTH_ALLOW_LOOPBACK = True
    scope_factory("all", group="users", server_rules=[{"server": "*", "methods": ["*"], "tools": ["*"]}])
    for name in ("ann", "ben"):
        member(name, "users")
    return ServerFactory(
        path="/upclock", name="Up Clock", proxy_pass_url=upstream.server_url, upstream_auth="user_oauth"
    )


def named(gateway, path: str = "") -> str:
    """The registry's URL by the name `localhost`: the upstream is at 127.0.0.1, and browsers keep cookies
    per host whatever the port, so the two sessions of the user at Chromium stay apart."""
    return gateway.url(path).replace("127.0.0.1", "localhost")


def token_of(username: str, token_for) -> str:
    return token_for(User.objects.get(username=username))


def access_token_of(username: str, server) -> str:
    """The access token the gateway sends upstream for the user now (refreshed first when expiring)."""
    principal = principal_for_user(User.objects.get(username=username), auth_method=AuthMethod.SESSION)
    return headers_for(server, principal)["Authorization"].removeprefix("Bearer ")


def in_session(url: str, token: str, work, certificate=None):
    async def session():
        context = ssl.create_default_context(cafile=str(certificate[0])) if certificate else True
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient(headers=headers, verify=context, timeout=httpx2.Timeout(40)) as http:
            async with Client(
                streamable_http_client(url, http_client=http), mode="legacy", cache=None
            ) as client:
                return await work(client)

    return anyio.run(session)


async def add(client) -> str:
    return (await client.call_tool("add", {"a": 2, "b": 3})).content[0].text


async def asked(client):
    try:
        await client.call_tool("add", {"a": 2, "b": 3})
    except MCPError as error:
        return error.error
    raise AssertionError("the call was not asked for a sign-in")


def test_a_first_call_is_asked_the_user_signs_in_and_the_retried_call_acts_as_them_upstream(
    secure_gateway, upstream, upclock, token_for, certificate
):
    url, base = named(secure_gateway, "/upclock/mcp"), named(secure_gateway)

    async def ask_sign_in_retry(client):
        error = await asked(client)
        ended = await sign_in(error.data["elicitations"][0]["url"], user="ann", upstream_user="alice-up")
        return error, ended, await add(client)

    error, ended, again = in_session(url, token_of("ann", token_for), ask_sign_in_retry, certificate)

    assert error.code == -32042
    assert error.data["elicitations"][0]["url"] == f"{base}/connections/upclock"
    assert ended.splitlines()[0] == f"{base}/connections"
    assert "Up Clock is connected: go back to your MCP host and try again." in ended
    assert again == "5"
    assert upstream.user_of(access_token_of("ann", upclock)) == "alice-up"
    assert f"{base}/connections/oauth/client.json" in upstream.clients()  # named by its document
    assert not UpstreamClient.objects.exists()

    ended = anyio.run(lambda: sign_in(f"{base}/connections/upclock", user="ben", upstream_user="bob-up"))

    assert "Up Clock is connected" in ended
    assert in_session(url, token_of("ben", token_for), add, certificate) == "5"
    assert upstream.user_of(access_token_of("ben", upclock)) == "bob-up"
    assert upstream.user_of(access_token_of("ann", upclock)) == "alice-up"
    credential = UpstreamCredential.objects.get(user__username="ann")
    assert (credential.scopes, credential.expires_at > timezone.now()) == ("mcp", True)
    assert AuditEvent.objects.filter(action=AuditAction.CONNECTION_CONNECT).count() == 2


def test_a_sign_in_is_refreshed_on_a_401_and_before_expiry_and_a_revoked_one_is_asked_for_again(
    secure_gateway, upstream, upclock, token_for, certificate
):
    url, base = named(secure_gateway, "/upclock/mcp"), named(secure_gateway)
    anyio.run(lambda: sign_in(f"{base}/connections/upclock", user="ann", upstream_user="alice-up"))
    token = token_of("ann", token_for)
    first = access_token_of("ann", upclock)

    upstream.expire_access_tokens("alice-up")  # the upstream answers the next call 401

    assert in_session(url, token, add, certificate) == "5"
    second = access_token_of("ann", upclock)
    assert second != first
    assert upstream.user_of(second) == "alice-up"

    UpstreamCredential.objects.filter(user__username="ann").update(
        expires_at=timezone.now() + timedelta(seconds=5)
    )
    third = access_token_of("ann", upclock)  # within the margin: refreshed before it is sent

    assert third not in (first, second)
    assert upstream.user_of(third) == "alice-up"
    assert UpstreamCredential.objects.get(user__username="ann").expires_at > timezone.now() + timedelta(
        minutes=5
    )

    upstream.revoke_sign_ins("alice-up")
    error = in_session(url, token, asked, certificate)

    assert error.code == -32042
    assert error.data["elicitations"][0]["url"] == f"{base}/connections/upclock"
    assert not UpstreamCredential.objects.filter(user__username="ann").exists()
    [failed] = AuditEvent.objects.filter(action=AuditAction.CONNECTION_REFRESH_FAILED)
    assert (failed.target, failed.detail["user"]) == ("server:/upclock", "ann")


def test_behind_a_virtual_server_a_401_refreshes_the_sign_in_and_retries_as_for_a_plain_server(
    gateway, upstream, upclock, token_for
):
    virtual_server_create(
        actor=None, path="/upteam", definition={"name": "Up team", "members": [{"server": "/upclock"}]}
    )
    base, url = named(gateway), named(gateway, "/upteam/mcp")
    anyio.run(lambda: sign_in(f"{base}/connections/upclock", user="ann", upstream_user="alice-up"))
    token = token_of("ann", token_for)
    first = access_token_of("ann", upclock)

    async def listed_and_added(client) -> tuple[list[str], str]:
        upstream.expire_access_tokens("alice-up")  # the member answers the next request 401
        names = sorted(tool.name for tool in (await client.list_tools()).tools)
        upstream.expire_access_tokens("alice-up")
        return names, await add(client)

    names, added = in_session(url, token, listed_and_added)

    assert "add" in names
    assert added == "5"
    second = access_token_of("ann", upclock)
    assert second != first and upstream.user_of(second) == "alice-up"
    assert UpstreamCredential.objects.filter(user__username="ann").exists()


def test_a_sign_in_completed_in_another_users_browser_connects_nobody_and_cannot_be_replayed(
    secure_gateway, upstream, upclock
):
    base = named(secure_gateway)
    callback = anyio.run(
        lambda: sign_in(
            f"{base}/connections/upclock", user="ann", upstream_user="alice-up", catch_callback=True
        )
    )

    seen_by_ben = anyio.run(lambda: open_as(callback, user="ben"))
    seen_by_ann = anyio.run(lambda: open_as(callback, user="ann"))

    assert "This sign-in was started by another account than yours: nothing was connected." in seen_by_ben
    assert "This sign-in has expired or was already used" in seen_by_ann
    assert not UpstreamCredential.objects.exists()


def test_over_http_the_registry_registers_itself_once_and_connects(gateway, upstream, upclock, token_for):
    base = named(gateway)

    ended = anyio.run(lambda: sign_in(f"{base}/connections/upclock", user="ann", upstream_user="alice-up"))

    assert "Up Clock is connected" in ended
    [client] = UpstreamClient.objects.all()
    assert (client.issuer, client.redirect_uri) == (upstream.url, f"{base}/connections/oauth/callback")
    assert client.client_id in upstream.clients()
    assert in_session(named(gateway, "/upclock/mcp"), token_of("ann", token_for), add) == "5"
    assert upstream.user_of(access_token_of("ann", upclock)) == "alice-up"
