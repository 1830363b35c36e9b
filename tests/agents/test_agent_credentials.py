"""An agent that needs each user's own secret, as a server can: the official `a2a-sdk` client through the
gateway is asked in the protocol (a task in A2A's `auth-required` state naming the connect URL), the user
connects on the Connections page, and the message sent again reaches the agent with their own key and
never the caller's token. Methods that answer no task get the binding's error with the link; a service
account is told it cannot connect one; the health check asks for a discovery connection. Operators'
shared headers are sealed at rest, moved with a data migration, and stop opening when the agent's address
moves behind the registry's back."""

import json

import anyio
import httpx
import pytest
from a2a.types import TaskState
from django.db import connection
from django.test import Client as PageClient

from agents.cache import ROUTES
from agents.health import check_agent
from agents.models import Agent
from agents.services import agent_update
from connections.models import UpstreamCredential
from tests.a2a_agents import echo_agent, last_task
from tests.agents.test_a2a_gateway import V1, _with_client
from tests.factories import AgentFactory
from tests.gateway.gateway_calls import (  # noqa: F401
    bearer,
    caller_fixture,
    gateway_fixture,
    post,
    reported_fixture,
)

pytestmark = pytest.mark.django_db(transaction=True)

EVERYTHING = {"server": "/keyed", "methods": ["*"]}


@pytest.fixture
def keyed():
    """An agent that serves only the keys of gina and max, each connected by its own user."""
    running = echo_agent(requires=("X-Api-Key", ("key-of-gina", "key-of-max")))
    agent = AgentFactory(
        path="/keyed",
        name="Keyed",
        url=running.url("/"),
        preferred_transport="JSONRPC",
        protocol_version="1.0",
        capabilities={"streaming": True},
        visibility="public",
        is_enabled=True,
        upstream_auth="user_secret",
        user_secret_header="X-Api-Key: {secret}",
    )
    yield running, agent
    running.stop()


def message(gateway, token, text: str, streaming: bool = True):
    return anyio.run(
        lambda: _with_client(
            gateway.url("/keyed/a2a"), token, lambda c: last_task(c, text), streaming=streaming
        )
    )


def rpc(gateway, token: str, method: str, params: dict) -> tuple[int, dict]:
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    status, _, raw = post(gateway.port, "/keyed/a2a", body, {**bearer(token), **V1})
    return status, json.loads(raw)


def connect(username: str, secret: str) -> int:
    """The user connects their secret on the Connections page (their own session)."""
    from accounts.models import User

    page = PageClient()
    page.force_login(User.objects.get(username=username))
    return page.post("/connections/keyed", {"secret": secret}).status_code


@pytest.mark.parametrize("streaming", [False, True])
def test_a_user_is_asked_in_the_protocol_connects_and_their_own_key_reaches_the_agent(
    gateway, caller, keyed, streaming
):
    running, _ = keyed
    token = caller(EVERYTHING)

    asked = message(gateway, token, "hello", streaming)
    connected = connect("gina", "key-of-gina")
    answered = message(gateway, token, "hello", streaming)

    connect_url = gateway.url("/connections/keyed")
    assert asked.status.state == TaskState.TASK_STATE_AUTH_REQUIRED
    assert connect_url in asked.status.message.parts[0].text
    assert asked.status.message.parts[1].data.struct_value["connectUrl"] == connect_url
    assert connected == 302
    assert answered.status.state == TaskState.TASK_STATE_COMPLETED
    assert answered.artifacts[0].parts[0].text == "echo: hello"
    assert len(running.guard.seen) == 2  # the ask never reached the agent: the message sent again, its task
    assert {seen.get(b"x-api-key") for seen in running.guard.seen} == {b"key-of-gina"}
    assert not any(b"authorization" in seen for seen in running.guard.seen)


def test_each_user_reaches_the_agent_with_their_own_key_and_the_ask_task_is_nobodys(gateway, caller, keyed):
    running, _ = keyed
    gina = caller(EVERYTHING)
    max_token = caller(EVERYTHING, name="max")
    connect("gina", "key-of-gina")
    asked = message(gateway, max_token, "first")

    connect("max", "key-of-max")
    by_gina, by_max = message(gateway, gina, "one"), message(gateway, max_token, "two")
    ask_named = rpc(gateway, max_token, "GetTask", {"id": asked.id})

    assert (by_gina.artifacts[0].parts[0].text, by_max.artifacts[0].parts[0].text) == (
        "echo: one",
        "echo: two",
    )
    keys = [seen.get(b"x-api-key") for seen in running.guard.seen]
    assert keys == [b"key-of-gina", b"key-of-gina", b"key-of-max", b"key-of-max"]  # each message, its task
    assert ask_named[1]["error"]["code"] == -32001  # the ask's task is the gateway's: nobody's to read


def test_a_method_without_a_task_gets_the_bindings_error_with_the_link(gateway, caller, keyed):
    token = caller(EVERYTHING)

    status, answer = rpc(gateway, token, "ListTasks", {})
    rest = httpx.get(gateway.url("/keyed/a2a/tasks"), headers={**bearer(token), **V1}, timeout=20)

    connect_url = gateway.url("/connections/keyed")
    assert status == 200
    assert answer["error"]["code"] == -32050
    assert answer["error"]["message"] == (
        f"/keyed needs your own credential: connect it, then try again. Connect at {connect_url}"
    )
    assert answer["error"]["data"] == {"connectUrl": connect_url}
    assert rest.status_code == 403
    assert rest.json()["error"]["status"] == "PERMISSION_DENIED"
    assert rest.json()["error"]["details"] == [{"connectUrl": connect_url}]


def test_the_health_check_needs_a_discovery_connection_and_then_uses_it(keyed):
    running, agent = keyed

    before = check_agent(agent)
    from connections.services import credential_secret_connect

    credential_secret_connect(actor=None, target=agent, user=None, secret="key-of-max", purpose="discovery")
    after = check_agent(Agent.objects.get(pk=agent.pk))

    assert (before.status, before.detail) == (
        "needs-connection",
        "/keyed needs a discovery connection (made by an administrator in the console).",
    )
    assert after.status == "healthy"
    assert {seen.get(b"x-api-key") for seen in running.guard.seen} == {b"key-of-max"}


def test_shared_headers_are_sealed_at_rest_and_do_not_follow_an_address_moved_behind_the_registrys_back(
    gateway, caller
):
    running = echo_agent(requires=("X-Api-Key", "operator-key"))
    try:
        agent = AgentFactory(path="/keyed", url=running.url("/"), protocol_version="1.0", is_enabled=True)
        agent_update(actor=None, agent=agent, headers={"X-Api-Key": "operator-key"})
        token = caller(EVERYTHING)
        answered = message(gateway, token, "hi")
        with connection.cursor() as cursor:
            cursor.execute("SELECT sealed_headers, upstream_auth FROM agents_agent WHERE path = '/keyed'")
            stored, mode = cursor.fetchone()
            moved = running.url("/").replace("127.0.0.1", "localhost")
            cursor.execute("UPDATE agents_agent SET url = %s WHERE path = '/keyed'", [moved])
        ROUTES.bump()  # as a restart or the next write would: a raw update moves no cache's epoch
        refused = rpc(gateway, token, "ListTasks", {})
    finally:
        running.stop()

    assert answered.artifacts[0].parts[0].text == "echo: hi"
    assert mode == "shared_headers"
    assert stored.startswith("v1.") and "operator-key" not in stored
    assert refused[1]["error"]["message"].startswith("The shared credential of /keyed no longer opens")
    assert len(running.guard.seen) == 2  # the message and its task; nothing went to the moved address
    assert not UpstreamCredential.objects.exists()


def test_a_credential_is_never_sent_to_a_binding_served_at_another_origin(gateway, caller):
    own, elsewhere = echo_agent(), echo_agent(requires=("X-Api-Key", "the-registrys-key"))
    try:
        agent = AgentFactory(
            path="/keyed",
            url=own.url("/"),
            preferred_transport="JSONRPC",
            protocol_version="1.0",
            interfaces=[
                {"url": elsewhere.url("/rest"), "protocol_binding": "HTTP+JSON", "protocol_version": "1.0"}
            ],
            visibility="public",
            is_enabled=True,
        )
        agent_update(actor=None, agent=agent, headers={"X-Api-Key": "the-registrys-key"})
        message = {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}

        answer = httpx.post(
            gateway.url("/keyed/a2a/message:send"),
            json=message,
            headers={**bearer(caller(EVERYTHING)), **V1},
            timeout=20,
        )
    finally:
        own.stop()
        elsewhere.stop()

    own_origin = own.url("/").rstrip("/")
    assert elsewhere.guard.seen == []
    assert (answer.status_code, answer.json()["error"]["message"]) == (
        502,
        f"/keyed is reached at another address than its URL here; the registry sends its credential only "
        f"to {own_origin}.",
    )
