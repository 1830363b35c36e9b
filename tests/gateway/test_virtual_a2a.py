"""A virtual server published as an A2A agent, with the official a2a-sdk client on one side and a real MCP
server behind it: its card lists the caller's tools as skills (their schemas in the registry's extension);
a message with a data part `{skill, arguments}` is a call of that tool whose result comes back as the
task's artifact; a tool the caller may not call is refused in A2A's error shape, as the MCP call would be."""

import json
import time

import anyio
import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import Message, Part, Role, SendMessageRequest, SubscribeToTaskRequest, TaskState
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.struct_pb2 import Value
from mcp.server import MCPServer

from tests.factories import ServerFactory, ToolFactory
from tests.gateway.gateway_calls import gateway_fixture  # noqa: F401
from tests.mcp_servers import UvicornThread, loopback_socket, recorded_time_server
from virtual_servers.services import virtual_server_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def recorded():
    running, recorder = recorded_time_server()
    yield running.url("/mcp"), recorder
    running.stop()


@pytest.fixture
def desk(recorded):
    clock = ServerFactory(path="/clock", name="Clock", proxy_pass_url=recorded[0])
    for name in ("add", "echo"):
        ToolFactory(server=clock, name=name)
    return virtual_server_create(
        actor=None,
        path="/desk",
        definition={
            "name": "Desk",
            "a2a": True,
            "members": [{"server": "/clock", "tools": {"include": ["add", "echo"]}}],
        },
    )


def caller(member, scope_factory, token_for, name: str, tools: list[str]) -> str:
    rules = [
        {"server": "/desk", "methods": ["*"], "tools": tools},
        {"server": "/clock", "methods": ["*"], "tools": ["*"]},
    ]
    scope_factory(f"{name}-desk", group=name, server_rules=rules)
    return token_for(member(name, name))


def sent(gateway, token: str, skill: str, arguments: dict):
    async def session():
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            client = await create_client(
                gateway.url("/desk/a2a"), client_config=ClientConfig(httpx_client=http, streaming=False)
            )
            data = ParseDict({"skill": skill, "arguments": arguments}, Value())
            request = SendMessageRequest(
                message=Message(message_id="m1", role=Role.ROLE_USER, parts=[Part(data=data)])
            )
            async with client:
                return [event async for event in client.send_message(request)]

    return anyio.run(session)


def test_the_card_lists_the_callers_tools_as_skills_with_their_schemas(
    gateway, desk, member, scope_factory, token_for
):
    token = caller(member, scope_factory, token_for, "ivy", ["add"])

    card = httpx.get(
        gateway.url("/desk/a2a/.well-known/agent-card.json"), headers={"Authorization": f"Bearer {token}"}
    )

    body = card.json()
    assert card.status_code == 200
    assert [skill["id"] for skill in body["skills"]] == ["add"]
    assert body["skills"][0]["securityRequirements"] == [{"schemes": {"registry": {"list": ["mcp"]}}}]
    assert body["supportedInterfaces"] == [
        {"url": gateway.url("/desk/a2a"), "protocolBinding": binding, "protocolVersion": version}
        for binding in ("JSONRPC", "HTTP+JSON")
        for version in ("1.0", "0.3")
    ]
    (extension,) = body["capabilities"]["extensions"]
    assert sorted(extension["params"]["schemas"]["add"]["properties"]) == ["a", "b"]


def test_a_data_part_calls_the_tool_and_its_result_is_the_tasks_artifact(
    gateway, desk, member, scope_factory, token_for
):
    token = caller(member, scope_factory, token_for, "jo", ["*"])

    (event,) = sent(gateway, token, "add", {"a": 2, "b": 3})

    assert event.task.status.state == TaskState.TASK_STATE_COMPLETED
    text, data = event.task.artifacts[0].parts
    assert text.text == "5"
    assert MessageToDict(data.data) == {"result": 5}  # the tool's structured content, as a data part
    assert event.task.artifacts[0].name == "add"


def test_a_tool_the_caller_may_not_call_is_refused_in_a2as_error_shape(
    gateway, desk, recorded, member, scope_factory, token_for
):
    token = caller(member, scope_factory, token_for, "kim", ["echo"])
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "SendMessage",
        "params": {
            "message": {
                "messageId": "m1",
                "role": "ROLE_USER",
                "parts": [{"data": {"skill": "add", "arguments": {"a": 1, "b": 2}}}],
            }
        },
    }

    answer = httpx.post(
        gateway.url("/desk/a2a"),
        json=body,
        headers={"Authorization": f"Bearer {token}", "A2A-Version": "1.0"},
    )

    assert answer.status_code == 200
    assert answer.json() == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {
            "code": -32050,
            "message": "Access denied: 'kim' may not call tool 'add' on server '/desk'.",
        },
    }
    assert recorded[1].seen == []  # nothing reached the server


def v03_message(request_id: int, method: str, skill: str, arguments: dict) -> dict:
    """A v0.3 JSON-RPC request sending a message whose data part names `skill`."""
    part = {"kind": "data", "data": {"skill": skill, "arguments": arguments}}
    message = {"kind": "message", "messageId": "m1", "role": "user", "parts": [part]}
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {"message": message}}


def test_a_v0_3_client_sends_message_send_with_a_data_part(gateway, desk, member, scope_factory, token_for):
    token = caller(member, scope_factory, token_for, "lu", ["*"])
    body = v03_message(3, "message/send", "add", {"a": 4, "b": 5})

    answer = httpx.post(
        gateway.url("/desk/a2a"), json=body, headers={"Authorization": f"Bearer {token}"}
    ).json()

    task = answer["result"]
    assert (task["kind"], task["status"]["state"]) == ("task", "completed")
    assert task["artifacts"][0]["parts"] == [
        {"kind": "text", "text": "9"},
        {"kind": "data", "data": {"result": 9}},
    ]


@pytest.fixture
def slow_desk():
    """A virtual server over a tool that takes the time it is asked to; `stopped` lists the calls the
    server was told to cancel."""
    server = MCPServer("Slow", log_level="WARNING")
    stopped = []

    @server.tool()
    async def slow_report(seconds: float) -> str:
        """Write a report, slowly."""
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            stopped.append(seconds)
            raise
        return "the report"

    running = UvicornThread(server.streamable_http_app(), loopback_socket()).start()
    ServerFactory(path="/slow", name="Slow", proxy_pass_url=running.url("/mcp"))
    virtual_server_create(
        actor=None, path="/desk", definition={"name": "Desk", "a2a": True, "members": [{"server": "/slow"}]}
    )
    yield stopped
    running.stop()


def a2a(gateway, token: str, method: str, params: dict) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    headers = {"Authorization": f"Bearer {token}", "A2A-Version": "1.0"}
    return httpx.post(gateway.url("/desk/a2a"), json=body, headers=headers, timeout=30).json()


def report(seconds: float) -> dict:
    data = {"skill": "slow_report", "arguments": {"seconds": seconds}}
    return {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"data": data}]}}


def test_a_slow_tool_is_a_working_task_got_until_done_cancelled_and_no_one_elses(
    gateway, slow_desk, member, scope_factory, token_for, settings
):
    settings.VIRTUAL_A2A_ANSWER_SECONDS = 0.3
    rules = [{"server": path, "methods": ["*"], "tools": ["*"]} for path in ("/desk", "/slow")]
    scope_factory("slow", group="slow", server_rules=rules)
    token, other = token_for(member("mo", "slow")), token_for(member("ned", "slow"))

    started = a2a(gateway, token, "SendMessage", report(1.0))["result"]["task"]
    foreign = a2a(gateway, other, "GetTask", {"id": started["id"]})
    states = []
    for _ in range(40):
        got = a2a(gateway, token, "GetTask", {"id": started["id"]})["result"]
        states.append(got["status"]["state"])
        if got["status"]["state"] != "TASK_STATE_WORKING":
            break
        time.sleep(0.1)
    long_one = a2a(gateway, token, "SendMessage", report(30.0))["result"]["task"]
    cancelled = a2a(gateway, token, "CancelTask", {"id": long_one["id"]})["result"]
    again = a2a(gateway, token, "CancelTask", {"id": long_one["id"]})
    for _ in range(50):  # the call is stopped at the server too (notifications/cancelled)
        if slow_desk:
            break
        time.sleep(0.1)

    assert started["status"]["state"] == "TASK_STATE_WORKING"
    assert foreign["error"] == {"code": -32001, "message": "Task not found."}
    assert (states[0], states[-1]) == ("TASK_STATE_WORKING", "TASK_STATE_COMPLETED")
    assert got["artifacts"][0]["parts"] == [{"text": "the report"}, {"data": {"result": "the report"}}]
    assert cancelled["status"]["state"] == "TASK_STATE_CANCELED"
    assert again["error"] == {"code": -32002, "message": "The task is canceled: it cannot be cancelled."}
    assert slow_desk == [30.0]


def test_the_http_json_binding_sends_a_message_and_refuses_in_its_own_shape(
    gateway, desk, member, scope_factory, token_for
):
    token = caller(member, scope_factory, token_for, "pat", ["add"])
    headers = {"Authorization": f"Bearer {token}", "A2A-Version": "1.0"}

    def sent(skill: str) -> httpx.Response:
        message = {
            "messageId": "m1",
            "role": "ROLE_USER",
            "parts": [{"data": {"skill": skill, "arguments": {}}}],
        }
        return httpx.post(gateway.url("/desk/a2a/message:send"), json={"message": message}, headers=headers)

    added = httpx.post(
        gateway.url("/desk/a2a/message:send"),
        json={
            "message": {
                "messageId": "m2",
                "role": "ROLE_USER",
                "parts": [{"data": {"skill": "add", "arguments": {"a": 1, "b": 1}}}],
            }
        },
        headers=headers,
    )
    refused = sent("echo")
    missing = httpx.get(gateway.url("/desk/a2a/tasks/no-such-task"), headers=headers)

    assert (added.status_code, added.json()["task"]["status"]["state"]) == (200, "TASK_STATE_COMPLETED")
    assert added.json()["task"]["artifacts"][0]["parts"][0] == {"text": "2"}
    assert refused.status_code == 403
    assert (
        refused.json()["error"]["message"]
        == "Access denied: 'pat' may not call tool 'echo' on server '/desk'."
    )
    assert (missing.status_code, missing.json()["error"]["message"]) == (404, "Task not found.")


def slow_caller(member, scope_factory, token_for, *names: str) -> list[str]:
    rules = [{"server": path, "methods": ["*"], "tools": ["*"]} for path in ("/desk", "/slow")]
    scope_factory("slow", group="slow", server_rules=rules)
    return [token_for(member(name, "slow")) for name in names]


def test_a_streamed_message_and_a_subscription_follow_a_slow_tool_to_its_end(
    gateway, slow_desk, member, scope_factory, token_for, settings
):
    settings.VIRTUAL_A2A_ANSWER_SECONDS = 0.2
    (token,) = slow_caller(member, scope_factory, token_for, "ola")
    data = ParseDict({"skill": "slow_report", "arguments": {"seconds": 1.0}}, Value())
    request = SendMessageRequest(
        message=Message(message_id="m1", role=Role.ROLE_USER, parts=[Part(data=data)])
    )

    async def session():
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            config = ClientConfig(httpx_client=http, streaming=True)
            streamed = await create_client(gateway.url("/desk/a2a"), client_config=config)
            followed = await create_client(gateway.url("/desk/a2a"), client_config=config)
            events = []
            async with streamed, followed:
                async for event in streamed.send_message(request):
                    events.append(event)
                    if len(events) == 1:  # a second client follows the same task while it works
                        subscription = [
                            e async for e in followed.subscribe(SubscribeToTaskRequest(id=event.task.id))
                        ]
            return events, subscription

    events, subscription = anyio.run(session)

    assert [event.WhichOneof("payload") for event in events] == ["task", "artifact_update", "status_update"]
    assert events[0].task.status.state == TaskState.TASK_STATE_WORKING
    assert [part.text for part in events[1].artifact_update.artifact.parts][0] == "the report"
    assert events[2].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    assert [event.WhichOneof("payload") for event in subscription] == [
        "task",
        "artifact_update",
        "status_update",
    ]
    assert subscription[0].task.id == events[0].task.id
    assert subscription[2].status_update.status.state == TaskState.TASK_STATE_COMPLETED


def test_a_subscription_to_an_ended_or_anothers_task_is_refused_in_each_binding(
    gateway, slow_desk, member, scope_factory, token_for, settings
):
    settings.VIRTUAL_A2A_ANSWER_SECONDS = 0.2
    token, other = slow_caller(member, scope_factory, token_for, "pia", "quin")
    started = a2a(gateway, token, "SendMessage", report(0.5))["result"]["task"]
    foreign = a2a(gateway, other, "SubscribeToTask", {"id": started["id"]})
    for _ in range(40):
        if (
            a2a(gateway, token, "GetTask", {"id": started["id"]})["result"]["status"]["state"]
            != "TASK_STATE_WORKING"
        ):
            break
        time.sleep(0.1)
    ended = a2a(gateway, token, "SubscribeToTask", {"id": started["id"]})
    rest = httpx.post(
        gateway.url(f"/desk/a2a/tasks/{started['id']}:subscribe"),
        headers={"Authorization": f"Bearer {token}", "A2A-Version": "1.0"},
    )

    assert foreign["error"] == {"code": -32001, "message": "Task not found."}
    assert ended["error"] == {
        "code": -32004,
        "message": "The task is completed: there is nothing more to follow.",
    }
    assert rest.status_code == 400
    assert rest.json()["error"]["status"] == "FAILED_PRECONDITION"


def test_a_v0_3_stream_ends_with_the_artifact_and_a_final_status_update(
    gateway, slow_desk, member, scope_factory, token_for, settings
):
    settings.VIRTUAL_A2A_ANSWER_SECONDS = 0.2
    (token,) = slow_caller(member, scope_factory, token_for, "rae")
    body = v03_message(5, "message/stream", "slow_report", {"seconds": 0.6})

    answer = httpx.post(
        gateway.url("/desk/a2a"), json=body, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )

    assert answer.headers["content-type"] == "text/event-stream"
    events = [json.loads(line[6:]) for line in answer.text.splitlines() if line.startswith("data: ")]
    assert [event["id"] for event in events] == [5, 5, 5]
    results = [event["result"] for event in events]
    assert [(result["kind"], result["status"]["state"]) for result in (results[0], results[2])] == [
        ("task", "working"),
        ("status-update", "completed"),
    ]
    assert results[1]["kind"] == "artifact-update"
    assert results[1]["artifact"]["parts"][0] == {"kind": "text", "text": "the report"}
    assert results[2]["final"] is True


def test_a_tool_that_answers_at_once_is_streamed_as_its_completed_task(
    gateway, desk, member, scope_factory, token_for
):
    token = caller(member, scope_factory, token_for, "sol", ["add"])
    message = {
        "messageId": "m1",
        "role": "ROLE_USER",
        "parts": [{"data": {"skill": "add", "arguments": {"a": 2, "b": 2}}}],
    }

    answer = httpx.post(
        gateway.url("/desk/a2a/message:stream"),
        json={"message": message},
        headers={"Authorization": f"Bearer {token}", "A2A-Version": "1.0"},
    )

    events = [json.loads(line[6:]) for line in answer.text.splitlines() if line.startswith("data: ")]
    assert len(events) == 1
    assert events[0]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert events[0]["task"]["artifacts"][0]["parts"][0] == {"text": "4"}
