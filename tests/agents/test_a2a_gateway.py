"""A2A agents through the gateway with the official `a2a-sdk` on both sides (tests/a2a_agents.py): the
client resolves the card at the gateway and sends, streams, gets, lists and cancels tasks at v1.0 and
v0.3; another caller cannot reach those tasks; a method the rules do not grant is refused before the
agent sees it; push-notification URLs on private addresses are refused; hidden agents are 404."""

import asyncio
import json
import time

import anyio
import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.client.card_resolver import parse_agent_card
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)

from tests.a2a_agents import echo_agent
from tests.factories import AgentFactory
from tests.gateway.gateway_calls import (  # noqa: F401
    bearer,
    caller_fixture,
    gateway_fixture,
    post,
    reported_fixture,
)

pytestmark = pytest.mark.django_db(transaction=True)

EVERYTHING = {"server": "/echo", "methods": ["*"]}
V1 = {"A2A-Version": "1.0"}  # what a v1.0 client sends (without it, the agent reads v0.3)


@pytest.fixture
def agent():
    running = echo_agent()
    url = running.url("/")
    interfaces = [
        {"url": url, "protocol_binding": "JSONRPC", "protocol_version": "1.0"},
        {"url": url, "protocol_binding": "JSONRPC", "protocol_version": "0.3"},
        {"url": f"{url}rest", "protocol_binding": "HTTP+JSON", "protocol_version": "1.0"},
        {"url": f"{url}rest", "protocol_binding": "HTTP+JSON", "protocol_version": "0.3"},
    ]
    AgentFactory(
        path="/echo",
        name="Echo",
        url=url,
        preferred_transport="JSONRPC",
        protocol_version="1.0",
        interfaces=interfaces,
        capabilities={"streaming": True},
        visibility="public",
        is_enabled=True,
    )
    yield running
    running.stop()


def said(text: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(message_id=f"m-{text}", role=Role.ROLE_USER, parts=[Part(text=text)])
    )


async def _with_client(
    url: str, token: str, work, streaming: bool = True, version: str | None = None, binding: str = "JSONRPC"
):
    async with httpx.AsyncClient(headers=bearer(token), timeout=20) as http:
        config = ClientConfig(httpx_client=http, streaming=streaming, supported_protocol_bindings=[binding])
        if version is None:
            client = await create_client(url, client_config=config)
        else:  # a client that speaks only `version`: the gateway's card cut to that interface
            card = (await http.get(f"{url}/.well-known/agent-card.json")).json()
            card["supportedInterfaces"] = [
                i
                for i in card["supportedInterfaces"]
                if i["protocolVersion"].startswith(version) and i["protocolBinding"] == binding
            ]
            client = await create_client(parse_agent_card(card), client_config=config)
        async with client:
            return await work(client)


def run(url: str, token: str, work, **options):
    return anyio.run(lambda: _with_client(url, token, work, **options))


async def send(client, text: str):
    """The task the agent's answer to `text` made, as the agent has it once the answer is over."""
    task_id = None
    async for event in client.send_message(said(text)):
        if event.HasField("task"):
            task_id = event.task.id
    return await client.get_task(GetTaskRequest(id=task_id))


def test_the_sdk_client_works_through_the_gateway_at_v1(gateway, agent, caller):
    token = caller(EVERYTHING)

    async def work(client):
        task = await send(client, "hello")
        fetched = await client.get_task(GetTaskRequest(id=task.id))
        waiting = await send(client, "wait")
        cancelled = await client.cancel_task(CancelTaskRequest(id=waiting.id))
        listed = await client.list_tasks(ListTasksRequest())
        return task, fetched, waiting, cancelled, listed

    task, fetched, waiting, cancelled, listed = run(gateway.url("/echo/a2a"), token, work)
    card = httpx.get(gateway.url("/echo/a2a/.well-known/agent-card.json"), headers=bearer(token)).json()

    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert task.artifacts[0].parts[0].text == "echo: hello"
    assert (fetched.id, fetched.status.state) == (task.id, TaskState.TASK_STATE_COMPLETED)
    assert waiting.status.state == TaskState.TASK_STATE_WORKING
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert sorted(t.id for t in listed.tasks) == sorted([task.id, waiting.id])
    assert {i["url"] for i in card["supportedInterfaces"]} == {gateway.url("/echo/a2a")}
    assert sorted((i["protocolBinding"], i["protocolVersion"]) for i in card["supportedInterfaces"]) == [
        ("HTTP+JSON", "0.3"),
        ("HTTP+JSON", "1.0"),
        ("JSONRPC", "0.3"),
        ("JSONRPC", "1.0"),
    ]
    assert card["url"] == gateway.url("/echo/a2a")
    assert agent.url("/") not in json.dumps(card)


@pytest.mark.parametrize("streaming", [False, True])
def test_the_sdk_client_works_through_the_gateway_at_v0_3(gateway, agent, caller, streaming):
    token = caller(EVERYTHING)

    async def work(client):
        task = await send(client, "hello")
        fetched = await client.get_task(GetTaskRequest(id=task.id))
        waiting = await send(client, "wait")
        cancelled = await client.cancel_task(CancelTaskRequest(id=waiting.id))
        return task, fetched, cancelled

    task, fetched, cancelled = run(gateway.url("/echo/a2a"), token, work, streaming=streaming, version="0.")

    assert task.artifacts[0].parts[0].text == "echo: hello"
    assert fetched.status.state == TaskState.TASK_STATE_COMPLETED
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED


@pytest.mark.parametrize("version", ["1.", "0."])
@pytest.mark.parametrize("streaming", [False, True])
def test_the_sdk_client_works_through_the_gateway_over_http_json(gateway, agent, caller, version, streaming):
    token = caller(EVERYTHING)

    async def work(client):
        task = await send(client, "hello")
        waiting = await send(client, "wait")
        cancelled = await client.cancel_task(CancelTaskRequest(id=waiting.id))
        return task, cancelled

    task, cancelled = run(
        gateway.url("/echo/a2a"), token, work, streaming=streaming, version=version, binding="HTTP+JSON"
    )

    assert task.artifacts[0].parts[0].text == "echo: hello"
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED


def test_over_http_json_another_callers_task_is_404_and_a_method_not_granted_403(gateway, agent, caller):
    owner = caller(EVERYTHING, name="olga")
    other = caller(EVERYTHING, name="oscar")
    reader = caller({"server": "/echo", "methods": ["SendMessage"]}, name="rita")

    waiting = run(
        gateway.url("/echo/a2a"), owner, lambda client: send(client, "wait"), binding="HTTP+JSON"
    ).id
    theirs = httpx.get(gateway.url(f"/echo/a2a/tasks/{waiting}"), headers={**bearer(other), **V1})
    cancel = httpx.post(gateway.url(f"/echo/a2a/tasks/{waiting}:cancel"), headers={**bearer(reader), **V1})
    listed = httpx.get(gateway.url("/echo/a2a/tasks"), headers={**bearer(other), **V1})
    nothing = httpx.get(gateway.url("/echo/a2a/nothing"), headers={**bearer(owner), **V1})

    assert (theirs.status_code, theirs.json()) == (
        404,
        {"error": {"code": 404, "status": "NOT_FOUND", "message": "Task not found"}},
    )
    assert (cancel.status_code, cancel.json()["error"]["status"]) == (403, "PERMISSION_DENIED")
    assert (listed.status_code, listed.json().get("tasks", [])) == (200, [])
    assert (nothing.status_code, nothing.json()["detail"]) == (404, "No A2A operation is GET /nothing.")


def test_another_callers_tasks_are_not_found_and_not_listed(gateway, agent, caller):
    owner, other = caller(EVERYTHING, name="olga"), caller(EVERYTHING, name="oscar")

    async def start(client):
        return (await send(client, "hello")).id, (await send(client, "wait")).id

    done, waiting = run(gateway.url("/echo/a2a"), owner, start)
    attempts = [
        post(
            gateway.port,
            "/echo/a2a",
            {"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
            {**bearer(other), **V1},
        )
        for method, params in (
            ("GetTask", {"id": done}),
            ("CancelTask", {"id": waiting}),
            ("tasks/get", {"id": done}),
            ("tasks/cancel", {"id": waiting}),
            (
                "SendMessage",
                {
                    "message": {
                        "messageId": "x",
                        "role": "ROLE_USER",
                        "taskId": waiting,
                        "parts": [{"text": "hi"}],
                    }
                },
            ),
            ("CreateTaskPushNotificationConfig", {"taskId": waiting, "url": "https://example.com/hook"}),
        )
    ]
    listed = post(
        gateway.port,
        "/echo/a2a",
        {"jsonrpc": "2.0", "id": 2, "method": "ListTasks", "params": {}},
        {**bearer(other), **V1},
    )
    still = post(
        gateway.port,
        "/echo/a2a",
        {"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": waiting}},
        {**bearer(owner), **V1},
    )

    assert [(status, json.loads(body)["error"]) for status, _, body in attempts] == [
        (200, {"code": -32001, "message": "Task not found"})
    ] * 6
    assert json.loads(listed[2])["result"].get("tasks", []) == []
    assert json.loads(still[2])["result"]["status"]["state"] == "TASK_STATE_WORKING"  # never cancelled


def test_a_method_the_rules_do_not_grant_is_refused_before_the_agent_sees_it(gateway, agent, caller):
    sender = caller({"server": "/echo", "methods": ["SendMessage", "GetTask"]}, name="sam")

    async def start(client):
        return (await send(client, "wait")).id

    waiting = run(gateway.url("/echo/a2a"), sender, start, streaming=False)
    cancel = {"jsonrpc": "2.0", "id": 1, "method": "CancelTask", "params": {"id": waiting}}
    refused = post(gateway.port, "/echo/a2a", cancel, {**bearer(sender), **V1})
    still = post(gateway.port, "/echo/a2a", {**cancel, "method": "GetTask"}, {**bearer(sender), **V1})

    assert json.loads(refused[2])["error"] == {
        "code": -32050,
        "message": "Access denied: 'sam' may not call CancelTask on agent '/echo'.",
    }
    assert json.loads(still[2])["result"]["status"]["state"] == "TASK_STATE_WORKING"


def test_a_push_notification_url_on_a_private_address_is_refused(gateway, agent, caller):
    token = caller(EVERYTHING)

    async def start(client):
        return (await send(client, "wait")).id

    waiting = run(gateway.url("/echo/a2a"), token, start, streaming=False)
    answers = [
        post(
            gateway.port,
            "/echo/a2a",
            {"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
            bearer(token),
        )
        for method, params in (
            ("CreateTaskPushNotificationConfig", {"taskId": waiting, "url": "http://127.0.0.1:9/hook"}),
            (
                "tasks/pushNotificationConfig/set",
                {"taskId": waiting, "pushNotificationConfig": {"url": "http://10.0.0.1/"}},
            ),
            ("CreateTaskPushNotificationConfig", {"taskId": waiting, "url": "file:///etc/passwd"}),
        )
    ]

    messages = [json.loads(body)["error"]["message"] for _, _, body in answers]
    assert messages[0].startswith(
        "The push-notification URL is refused: 127.0.0.1 resolves to an address that"
    )
    assert messages[1].startswith(
        "The push-notification URL is refused: 10.0.0.1 resolves to an address that"
    )
    assert messages[2] == "A push-notification URL must be an http or https URL."


def test_hidden_unknown_and_anonymous_are_refused_alike(gateway, agent, caller, member, token_for):
    from agents.models import Agent

    Agent.objects.filter(path="/echo").update(visibility="private")
    token = caller(EVERYTHING)
    message = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {}}

    hidden = post(gateway.port, "/echo/a2a", message, bearer(token))
    unknown = post(gateway.port, "/nobody/a2a", message, bearer(token))
    anonymous = post(gateway.port, "/echo/a2a", message, {})

    assert (hidden[0], json.loads(hidden[2])["detail"]) == (404, "No A2A agent at /echo.")
    assert (unknown[0], json.loads(unknown[2])["detail"]) == (404, "No A2A agent at /nobody.")
    assert anonymous[0] == 401


def test_every_forwarded_call_is_counted_by_its_family_and_agent(gateway, agent, caller, reported):
    receiver, reporter = reported
    token = caller(EVERYTHING)

    async def work(client):
        waiting = await send(client, "wait")
        await client.cancel_task(CancelTaskRequest(id=waiting.id))

    run(gateway.url("/echo/a2a"), token, work)
    run(gateway.url("/echo/a2a"), token, lambda client: send(client, "hello"), streaming=False, version="0.")
    reporter.close(timeout=5)

    executions = [m["dimensions"] for m in receiver.delivered() if m["type"] == "tool_execution"]
    assert [(d["server"], d["method"], d["success"], d["client_name"]) for d in executions] == [
        ("/echo", "message/stream", True, "a2a"),
        ("/echo", "tasks/get", True, "a2a"),
        ("/echo", "tasks/cancel", True, "a2a"),
        ("/echo", "message/send", True, "a2a"),
        ("/echo", "tasks/get", True, "a2a"),
    ]
    assert all(d["input_size_bytes"] > 0 and d["output_size_bytes"] > 0 for d in executions)


def test_a_task_is_its_callers_whichever_web_process_each_request_reaches(agent, caller):
    from registry_site.asgi import application
    from tests.mcp_servers import UvicornThread, loopback_socket

    first = UvicornThread(application, loopback_socket()).start()
    second = UvicornThread(application, loopback_socket()).start()
    owner, other = caller(EVERYTHING, name="olga"), caller(EVERYTHING, name="oscar")
    try:
        waiting = run(first.url("/echo/a2a"), owner, lambda client: send(client, "wait"), streaming=False).id
        get = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": waiting}}
        theirs = post(second.port, "/echo/a2a", get, {**bearer(other), **V1})
        mine = post(second.port, "/echo/a2a", get, {**bearer(owner), **V1})
    finally:
        first.stop()
        second.stop()

    assert json.loads(theirs[2])["error"] == {"code": -32001, "message": "Task not found"}
    assert json.loads(mine[2])["result"]["id"] == waiting


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_a_subscription_streams_the_tasks_events_as_they_happen(gateway, agent, caller, binding):
    token = caller(EVERYTHING)

    async def work(client):
        waiting = await send(client, "wait")
        states = []

        async def follow():
            async for event in client.subscribe(SubscribeToTaskRequest(id=waiting.id)):
                if event.HasField("task"):
                    states.append(event.task.status.state)
                    subscribed.set()
                elif event.HasField("status_update"):
                    states.append(event.status_update.status.state)

        subscribed = anyio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(follow)
            with anyio.fail_after(15):
                await subscribed.wait()  # the stream is open before the task changes
            await client.cancel_task(CancelTaskRequest(id=waiting.id))
        return states

    states = run(gateway.url("/echo/a2a"), token, work, binding=binding)

    assert states == [TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_CANCELED]


def test_a_subscription_the_client_leaves_ends_at_the_agent_too(gateway, agent, caller, reported):
    receiver, _ = reported
    token = caller(EVERYTHING)
    waiting = run(gateway.url("/echo/a2a"), token, lambda client: send(client, "wait"), streaming=False).id
    subscribe = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": waiting}}

    with httpx.stream(
        "POST", gateway.url("/echo/a2a"), json=subscribe, headers={**bearer(token), **V1}, timeout=10
    ) as stream:
        first = next(stream.iter_lines())  # the task as it stands; then the client leaves

    def subscriptions():
        return [m for m in receiver.delivered() if m["dimensions"].get("method") == "tasks/resubscribe"]

    deadline = time.monotonic() + 15
    while not subscriptions() and time.monotonic() < deadline:
        time.sleep(0.1)  # the client posts its metrics every 0.2 s
    assert first.startswith("data: ")
    assert [m["dimensions"]["success"] for m in subscriptions()] == [True]  # the relay ended with the client


def test_a_page_of_the_registry_with_an_a2a_segment_stays_the_registrys(gateway, agent, caller):
    from tests.factories import AgentFactory as Agents

    Agents(path="/team/a2a", name="Team A2A", visibility="public", is_enabled=True)
    token = caller(EVERYTHING)

    page = httpx.get(gateway.url("/api/agents/team/a2a"), headers=bearer(token), timeout=10)

    assert (page.status_code, page.json()["name"]) == (200, "Team A2A")  # the agent API's, not the gateway's


def test_the_agent_gets_the_registrys_credential_for_it_and_never_the_callers(gateway, caller):
    from agents.models import Agent
    from agents.services import agent_update

    guarded = echo_agent(requires=("X-Api-Key", "k-123"))
    try:
        url = guarded.url("/")
        AgentFactory(
            path="/echo", url=url, preferred_transport="JSONRPC", protocol_version="1.0", is_enabled=True
        )
        token = caller(EVERYTHING)
        message = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}
        refused = post(gateway.port, "/echo/a2a", message, {**bearer(token), **V1})
        agent_update(actor=None, agent=Agent.objects.get(path="/echo"), headers={"X-Api-Key": "k-123"})

        task = run(gateway.url("/echo/a2a"), token, lambda client: send(client, "hello"))
    finally:
        guarded.stop()

    assert refused[0] == 401, refused  # the agent's own answer: the registry had no credential for it yet
    assert task.artifacts[0].parts[0].text == "echo: hello"
    assert {seen.get(b"x-api-key") for seen in guarded.guard.seen[1:]} == {b"k-123"}
    assert not any(b"authorization" in seen for seen in guarded.guard.seen)


class _EndlessEvent:
    """A hostile agent: any POST is answered by one event stream whose first event never ends (64 KiB
    chunks, no newline), until the gateway hangs up or 64 MiB have gone."""

    def __init__(self):
        self.sent = 0
        self.hung_up = False

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return
        await receive()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )

        async def watch():
            while (await receive())["type"] != "http.disconnect":
                pass
            self.hung_up = True

        watcher = asyncio.create_task(watch())
        chunk = b"data: " + b"x" * 65536
        while self.sent < 64 * 1024 * 1024 and not self.hung_up:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            self.sent += len(chunk)
            await asyncio.sleep(0.001)
        watcher.cancel()
        await send({"type": "http.response.body", "body": b""})


def test_an_event_that_never_ends_is_cut_at_the_limit_and_the_client_told(gateway, caller, settings):
    from tests.mcp_servers import UvicornThread, loopback_socket

    settings.GATEWAY_MAX_REWRITE_BYTES = 1024 * 1024
    hostile = _EndlessEvent()
    running = UvicornThread(hostile, loopback_socket()).start()
    try:
        AgentFactory(path="/echo", url=running.url("/"), preferred_transport="JSONRPC", is_enabled=True)
        token = caller(EVERYTHING)
        message = {"jsonrpc": "2.0", "id": 7, "method": "SendStreamingMessage", "params": {}}
        with httpx.stream(
            "POST", gateway.url("/echo/a2a"), json=message, headers={**bearer(token), **V1}, timeout=30
        ) as stream:
            received = b"".join(stream.iter_bytes())
        deadline = time.monotonic() + 10
        while not hostile.hung_up and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        running.stop()

    assert len(received) < 4096  # none of the unfinished event
    assert received.startswith(b"data: ") and received.endswith(b"\n\n")
    assert json.loads(received[6:]) == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {
            "code": -32603,
            "message": "The agent at /echo sent an event that did not end within the gateway's limit of "
            "1048576 bytes.",
        },
    }
    assert hostile.hung_up and hostile.sent < 8 * 1024 * 1024  # the gateway hung up soon after the limit


def test_snake_case_params_are_judged_as_the_agent_reads_them(gateway, agent, caller):
    """a2a-sdk agents read `task_id` as `taskId`: another caller naming a task or context in snake_case,
    over JSON-RPC (v1.0 and v0.3) and HTTP+JSON, gets "task not found" like one in camelCase."""
    owner, other = caller(EVERYTHING, name="olga"), caller(EVERYTHING, name="oscar")

    async def start(client):
        task = await send(client, "wait")
        return task.id, task.context_id

    waiting, context = run(gateway.url("/echo/a2a"), owner, start)
    message = {"message_id": "x", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    attempts = [
        post(
            gateway.port,
            "/echo/a2a",
            {"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
            {**bearer(other), **V1},
        )
        for method, params in (
            ("SendMessage", {"message": {**message, "task_id": waiting}}),
            ("SendMessage", {"message": {**message, "context_id": context}}),
            ("SendMessage", {"message": {**message, "reference_task_ids": [waiting]}}),
            ("GetTaskPushNotificationConfig", {"task_id": waiting, "id": "c1"}),
            ("ListTaskPushNotificationConfigs", {"task_id": waiting}),
            ("ListTasks", {"context_id": context}),
            (
                "message/send",
                {
                    "message": {
                        "message_id": "y",
                        "role": "user",
                        "parts": [{"kind": "text", "text": "hi"}],
                        "kind": "message",
                        "task_id": waiting,
                    }
                },
            ),
            (
                "tasks/pushNotificationConfig/set",
                {"task_id": waiting, "push_notification_config": {"url": "https://example.com/h"}},
            ),
        )
    ]
    listed = httpx.get(
        gateway.url(f"/echo/a2a/rest/tasks?context_id={context}"), headers={**bearer(other), **V1}, timeout=10
    )

    assert [(status, json.loads(body)["error"]) for status, _, body in attempts] == [
        (200, {"code": -32001, "message": "Task not found"})
    ] * 8
    assert listed.status_code == 404, listed.text


@pytest.mark.parametrize(
    ("method", "params"),
    [
        (
            "SendMessage",
            {
                "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
                "configuration": {"task_push_notification_config": {"url": "http://127.0.0.1:9/internal"}},
            },
        ),
        ("CreateTaskPushNotificationConfig", {"task_id": "{task}", "url": "http://169.254.169.254/latest"}),
        (
            "message/send",
            {
                "message": {
                    "message_id": "y",
                    "role": "user",
                    "parts": [{"kind": "text", "text": "hi"}],
                    "kind": "message",
                },
                "configuration": {"push_notification_config": {"url": "http://127.0.0.1:9/internal"}},
            },
        ),
        (
            "tasks/pushNotificationConfig/set",
            {"taskId": "{task}", "push_notification_config": {"url": "http://169.254.169.254/"}},
        ),
    ],
)
def test_snake_case_push_urls_are_checked(gateway, agent, caller, method, params):
    token = caller(EVERYTHING)
    waiting = run(gateway.url("/echo/a2a"), token, lambda client: send(client, "wait"), streaming=False).id
    params = json.loads(json.dumps(params).replace("{task}", waiting))

    status, _, body = post(
        gateway.port,
        "/echo/a2a",
        {"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
        {**bearer(token), **V1},
    )

    error = json.loads(body)["error"]
    assert (status, error["code"]) == (200, -32602)
    assert error["message"].startswith("The push-notification URL is refused:")


def test_a_field_spelled_both_ways_is_refused(gateway, agent, caller):
    token = caller(EVERYTHING)
    message = {
        "messageId": "m",
        "role": "ROLE_USER",
        "parts": [{"text": "hi"}],
        "taskId": "a",
        "task_id": "b",
    }

    status, _, body = post(
        gateway.port,
        "/echo/a2a",
        {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}},
        {**bearer(token), **V1},
    )

    assert (status, json.loads(body)["error"]) == (
        200,
        {"code": -32602, "message": "'taskId' and 'task_id' are one field: send it once."},
    )


class _HoldsStreams:
    """An agent that keeps every stream open (one event, then nothing until the client leaves) and
    answers anything else at once."""

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return
        request = json.loads((await receive())["body"])
        if request["method"] != "SendStreamingMessage":
            answer = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"tasks": []}}).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            return await send({"type": "http.response.body", "body": answer})
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        await send(
            {
                "type": "http.response.body",
                "body": b'data: {"jsonrpc":"2.0","id":1,"result":{}}\n\n',
                "more_body": True,
            }
        )
        while (await receive())["type"] != "http.disconnect":
            pass


def test_an_agent_exchange_holds_a_fair_share_slot(gateway, caller, settings):
    """Every exchange holds a slot of its caller: a stream held open counts, and the caller's next call
    over its share is 429 in A2A's own shape while another caller is served at once."""
    from gateway import fair_share
    from tests.mcp_servers import UvicornThread, loopback_socket

    settings.GATEWAY_MAX_STREAMS_PER_CALLER = 1
    running = UvicornThread(_HoldsStreams(), loopback_socket()).start()
    try:
        AgentFactory(path="/echo", url=running.url("/"), preferred_transport="JSONRPC", is_enabled=True)
        hog, other = caller(EVERYTHING, name="hog"), caller(EVERYTHING, name="olga")
        streaming = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {}}
        listing = {"jsonrpc": "2.0", "id": 2, "method": "ListTasks", "params": {}}
        with httpx.stream(
            "POST", gateway.url("/echo/a2a"), json=streaming, headers={**bearer(hog), **V1}, timeout=10
        ) as held:
            lines = held.iter_lines()  # kept: an abandoned iterator closes the stream
            assert next(lines).startswith("data: ")
            over = post(gateway.port, "/echo/a2a", listing, {**bearer(hog), **V1})
            served = post(gateway.port, "/echo/a2a", listing, {**bearer(other), **V1})
        deadline = time.monotonic() + 5
        while fair_share.held() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        running.stop()

    assert over[0] == 429
    assert {k.lower(): v for k, v in over[1].items()}["retry-after"] == "1"
    assert json.loads(over[2])["error"] == {
        "code": -32023,
        "message": "You have 1 exchanges open through this gateway process; close one (a stream, say) "
        "before opening another.",
    }
    assert served[0] == 200
    assert fair_share.held() == {}


class _CarriageReturns:
    """An agent whose event stream ends its lines with CR alone (the standard allows it), then stays open."""

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return
        request = json.loads((await receive())["body"])
        start = {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/event-stream")],
        }
        await send(start)
        event = (
            b"event: message\rdata: "
            + json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {}}).encode()
        )
        await send({"type": "http.response.body", "body": event + b"\r\r", "more_body": True})
        while (await receive())["type"] != "http.disconnect":
            pass


def test_an_agents_events_ended_by_cr_alone_pass_as_they_come(gateway, caller):
    from tests.mcp_servers import UvicornThread, loopback_socket

    running = UvicornThread(_CarriageReturns(), loopback_socket()).start()
    try:
        AgentFactory(path="/echo", url=running.url("/"), preferred_transport="JSONRPC", is_enabled=True)
        streaming = {"jsonrpc": "2.0", "id": 5, "method": "SendStreamingMessage", "params": {}}
        with httpx.stream(
            "POST",
            gateway.url("/echo/a2a"),
            json=streaming,
            headers={**bearer(caller(EVERYTHING)), **V1},
            timeout=5,
        ) as stream:
            chunks = stream.iter_raw()
            first = next(chunks)
    finally:
        running.stop()

    # passed on at once, whole (the gateway's one reader writes its line ends as LF)
    assert first == b'event: message\ndata: {"jsonrpc": "2.0", "id": 5, "result": {}}\n\n'
