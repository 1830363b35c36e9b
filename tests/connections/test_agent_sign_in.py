"""An A2A agent users sign in to (`user_oauth`), end to end, as a server is (tests/connections/
test_user_sign_in.py): the upstream is a second instance of this registry whose gateway fronts a real
a2a-sdk agent and whose authorization server issues the tokens. The official a2a-sdk client sends a
message through our gateway, is asked in the protocol (an `auth-required` task naming the connect URL),
the user follows it in Chromium (our page, then the upstream's login and consent), and the message sent
again reaches the agent as that user upstream. When the upstream refuses the access token, the gateway
refreshes it once and tries again, so the client never sees the refusal."""

import json
import ssl

import anyio
import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import TaskState

from accounts.choices import AuthMethod
from accounts.models import User
from accounts.principal import principal_for_user
from connections.models import UpstreamCredential
from connections.resolver import headers_for
from tests.a2a_agents import echo_agent, last_task
from tests.connections.test_user_sign_in import named, token_of
from tests.connections.upstream import secure_gateway_fixture, sign_in, start_upstream, stop_peer  # noqa: F401
from tests.factories import AgentFactory
from tests.mcp_servers import time_server_fixture  # noqa: F401
from tests.oauth.flow import loopback_certificate

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    return loopback_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def helper():
    running = echo_agent()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def upstream(django_db_setup, django_db_blocker, tmp_path_factory, time_server, certificate, helper):
    with django_db_blocker.unblock():
        started, group, name = start_upstream(
            tmp_path_factory.mktemp("upstream"),
            clock_url=time_server,
            certificate=certificate[0],
            agent_url=helper.url("/"),
        )
        try:
            yield started
        finally:
            stop_peer(group, name)


@pytest.fixture
def upagent(upstream, settings, member, scope_factory):
    settings.UPSTREAM_OAUTH_ALLOW_LOOPBACK = True
    scope_factory("all", group="users", server_rules=[{"server": "*", "methods": ["*"], "tools": ["*"]}])
    member("ann", "users")
    return AgentFactory(
        path="/upagent",
        name="Up Agent",
        url=upstream.agent_url,
        preferred_transport="JSONRPC",
        protocol_version="1.0",
        capabilities={"streaming": True},
        visibility="public",
        is_enabled=True,
        upstream_auth="user_oauth",
    )


def with_client(url: str, token: str, work, certificate):
    async def session():
        context = ssl.create_default_context(cafile=str(certificate[0]))
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(headers=headers, verify=context, timeout=40) as http:
            client = await create_client(url, client_config=ClientConfig(httpx_client=http, streaming=False))
            async with client:
                return await work(client)

    return anyio.run(session)


def upstream_token(username: str, agent) -> str:
    principal = principal_for_user(User.objects.get(username=username), auth_method=AuthMethod.SESSION)
    return headers_for(agent, principal)["Authorization"].removeprefix("Bearer ")


def test_a_message_is_asked_the_user_signs_in_and_the_message_sent_again_acts_as_them_upstream(
    secure_gateway, upstream, upagent, token_for, certificate
):
    url, base = named(secure_gateway, "/upagent/a2a"), named(secure_gateway)

    async def ask_sign_in_again(client):
        asked = await last_task(client, "hello")
        link = json.loads(json.dumps(dict(asked.status.message.parts[1].data.struct_value)))["connectUrl"]
        ended = await sign_in(link, user="ann", upstream_user="alice-up")
        return asked, link, ended, await last_task(client, "hello")

    asked, link, ended, answered = with_client(
        url, token_of("ann", token_for), ask_sign_in_again, certificate
    )

    assert asked.status.state == TaskState.TASK_STATE_AUTH_REQUIRED
    assert link == f"{base}/connections/upagent"
    assert ended.splitlines()[0] == f"{base}/connections"
    assert "Up Agent is connected: go back to your A2A client and try again." in ended
    assert answered.status.state == TaskState.TASK_STATE_COMPLETED
    assert answered.artifacts[0].parts[0].text == "echo: hello"
    first = upstream_token("ann", upagent)
    assert upstream.user_of(first) == "alice-up"
    credential = UpstreamCredential.objects.get(user__username="ann")
    assert (credential.agent_id, credential.server_id, credential.mode) == (upagent.pk, None, "user_oauth")

    upstream.expire_access_tokens("alice-up")  # the upstream refuses it now; its refresh token stays good
    again = with_client(url, token_of("ann", token_for), lambda c: last_task(c, "again"), certificate)

    assert again.status.state == TaskState.TASK_STATE_COMPLETED, again
    assert again.artifacts[0].parts[0].text == "echo: again"
    refreshed = upstream_token("ann", upagent)
    assert refreshed != first
    assert upstream.user_of(refreshed) == "alice-up"
