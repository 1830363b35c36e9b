"""A2A agents as MCP tools on a virtual server, with the official Python SDK client on one side and a real
a2a-sdk agent on the other (tests/a2a_agents.py): each skill is a tool named `<key>__<skill id>`; a call is
a message to the agent whose answer is the tool's result; the conversation keeps its context across calls;
a task still working is waited for within the bound; and the agent's rights decide who sees and calls its
tools."""

import json

import pytest
from mcp.shared.exceptions import MCPError

from tests.a2a_agents import echo_agent
from tests.factories import AgentFactory, ServerFactory, ToolFactory
from tests.gateway.gateway_calls import gateway_fixture, post, run, sse_messages  # noqa: F401
from tests.mcp_servers import time_server_fixture  # noqa: F401
from virtual_servers.models import VirtualServer
from virtual_servers.services import virtual_server_create

pytestmark = pytest.mark.django_db(transaction=True)

SKILL = {"id": "echo", "name": "Echo", "description": "Repeats what it is told.", "examples": ["say hello"]}


@pytest.fixture(scope="module")
def helper():
    running = echo_agent()
    yield running
    running.stop()


def helper_agent(helper, path: str, name: str, version: str, streaming: bool = False, rest: bool = False):
    """The echo agent registered at `path`, its card saying it speaks A2A `version` (and streams, when
    `streaming`), over JSON-RPC, or HTTP+JSON alone when `rest`."""
    return AgentFactory(
        path=path,
        name=name,
        url=helper.url("/rest" if rest else "/"),
        preferred_transport="HTTP+JSON" if rest else "JSONRPC",
        protocol_version=version,
        skills=[SKILL],
        capabilities={"streaming": True} if streaming else {},
        visibility="public",
        is_enabled=True,
    )


@pytest.fixture
def mix(time_server, helper):
    clock = ServerFactory(path="/clock", name="Clock", proxy_pass_url=time_server)
    ToolFactory(server=clock, name="add")
    helper_agent(helper, "/helper", "Helper", "1.0")
    return virtual_server_create(
        actor=None,
        path="/mix",
        definition={
            "name": "Mix",
            "members": [{"server": "/clock", "tools": {"include": ["add"]}}],
            "agents": [{"agent": "/helper"}],
        },
    )


async def _context(client) -> str:
    return (await client.call_tool("helper__echo", {"message": "context"})).content[0].text


def caller(member, scope_factory, token_for, name: str, agent: bool) -> str:
    rules = [{"server": path, "methods": ["*"], "tools": ["*"]} for path in ("/mix", "/clock")]
    if agent:
        rules.append({"server": "/helper", "methods": ["SendMessage", "GetTask", "CancelTask"]})
    scope_factory(f"{name}-mix", group=name, server_rules=rules)
    return token_for(member(name, name))


def test_an_agents_skill_is_a_tool_whose_call_is_a_message_and_the_context_continues(
    gateway, mix, member, scope_factory, token_for
):
    token = caller(member, scope_factory, token_for, "ann", agent=True)

    async def work(client):
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        first = await client.call_tool("helper__echo", {"message": "hello"})
        second = await client.call_tool("helper__echo", {"message": "again"})
        contexts = [
            (await client.call_tool("helper__echo", {"message": "context"})).content[0].text for _ in "ab"
        ]
        return tools, first, second, contexts

    tools, first, second, contexts = run(gateway.url("/mix/mcp"), token, work)
    other_session = run(gateway.url("/mix/mcp"), token, lambda client: _context(client))

    assert sorted(tools) == ["add", "helper__echo"]
    assert tools["helper__echo"].description == "Repeats what it is told. (the A2A agent Helper)"
    assert tools["helper__echo"].input_schema["required"] == ["message"]
    assert tools["helper__echo"].input_schema["properties"]["message"]["examples"] == ["say hello"]
    assert ([part.text for part in first.content], first.is_error) == (["echo: hello"], False)
    assert [part.text for part in second.content] == ["echo: again"]
    assert contexts[0].startswith("context: ") and contexts[0] == contexts[1]  # one conversation
    assert other_session.startswith("context: ") and other_session != contexts[0]  # a session of its own
    assert VirtualServer.objects.get(path="/mix").agent_members.get().key == "helper"


def test_a_task_still_working_is_waited_for_within_the_bound(
    gateway, mix, member, scope_factory, token_for, settings
):
    settings.AGENT_TOOL_WAIT_SECONDS = 1
    token = caller(member, scope_factory, token_for, "bea", agent=True)

    async def work(client):
        return await client.call_tool("helper__echo", {"message": "wait"})

    answered = run(gateway.url("/mix/mcp"), token, work)

    assert answered.is_error is True
    assert answered.content[0].text.startswith("Helper is still working on it (task ")


def called_with_progress(gateway, token: str, tool: str, text: str):
    """(the result of a call of an agent's tool asking for progress, the (progress, message) heard)."""
    heard = []

    async def work(client):
        async def progress(progress, total, message):
            heard.append((progress, message))

        return await client.call_tool(tool, {"message": text}, progress_callback=progress)

    return run(gateway.url("/mix/mcp"), token, work), heard


def test_a_call_that_asks_for_progress_hears_of_each_poll_of_a_working_task(
    gateway, mix, member, scope_factory, token_for, settings
):
    settings.AGENT_TOOL_WAIT_SECONDS = 1.2
    token = caller(member, scope_factory, token_for, "hal", agent=True)

    answered, heard = called_with_progress(gateway, token, "helper__echo", "wait")

    assert answered.is_error is True
    assert len(heard) >= 2
    assert heard[:2] == [(1.0, "Helper: working"), (2.0, "Helper: working")]


def streamer(helper, member, scope_factory, token_for, version: str, name: str, rest: bool = False) -> str:
    """A token of `name` for /mix, whose one agent (key `s`) speaks A2A `version` and streams (over
    HTTP+JSON alone, when `rest`)."""
    helper_agent(helper, "/streamer", "Streamer", version, streaming=True, rest=rest)
    virtual_server_create(
        actor=None, path="/mix", definition={"name": "Mix", "agents": [{"agent": "/streamer", "key": "s"}]}
    )
    rules = [{"server": "/mix", "methods": ["*"], "tools": ["*"]}, {"server": "/streamer", "methods": ["*"]}]
    scope_factory("streams", group="streams", server_rules=rules)
    return token_for(member(name, "streams"))


@pytest.mark.parametrize(
    "version, rest", [("1.0", False), ("0.3", False), ("1.0", True)], ids=["1.0", "0.3", "http+json"]
)
def test_a_call_that_asks_for_progress_hears_each_status_update_of_an_agent_that_streams(
    gateway, helper, member, scope_factory, token_for, version, rest
):
    token = streamer(helper, member, scope_factory, token_for, version, "sid", rest)

    answered, heard = called_with_progress(gateway, token, "s__echo", "steps")

    assert answered.is_error is False
    assert [item.text for item in answered.content] == ["three steps done"]
    assert heard == [
        (1.0, "Streamer: working"),
        (2.0, "step 1 of 3"),
        (3.0, "step 2 of 3"),
        (4.0, "step 3 of 3"),
    ]


def test_an_agents_stream_then_its_polls_end_at_the_bound_with_the_task_still_working(
    gateway, helper, member, scope_factory, token_for, settings
):
    settings.AGENT_TOOL_WAIT_SECONDS = 1
    token = streamer(helper, member, scope_factory, token_for, "1.0", "sam")

    answered, heard = called_with_progress(gateway, token, "s__echo", "wait")

    assert answered.is_error is True
    assert answered.content[0].text.startswith("Streamer is still working on it (task ")
    assert heard[0] == (1.0, "Streamer: working")  # the stream's update; then GetTask's, once it ended
    assert {message for _, message in heard} == {"Streamer: working"}


def test_an_agents_stream_keeps_no_more_artifacts_than_the_gateway_reads(
    gateway, helper, member, scope_factory, token_for, settings
):
    settings.GATEWAY_MAX_REWRITE_BYTES = 50_000
    token = streamer(helper, member, scope_factory, token_for, "1.0", "flo")

    async def work(client):
        async def progress(progress, total, message):
            pass

        try:
            await client.call_tool("s__echo", {"message": "flood"}, progress_callback=progress)
        except MCPError as refused:
            return refused.error.code, refused.error.message
        raise AssertionError("the call was not refused")

    assert run(gateway.url("/mix/mcp"), token, work) == (
        -32603,
        "The agent at /streamer sent more artifacts than the gateway reads (50000 bytes).",
    )


def test_a_caller_who_may_not_message_the_agent_neither_sees_nor_calls_its_tools(
    gateway, mix, member, scope_factory, token_for
):
    token = caller(member, scope_factory, token_for, "cal", agent=False)

    async def work(client):
        tools = sorted(tool.name for tool in (await client.list_tools()).tools)
        try:
            await client.call_tool("helper__echo", {"message": "hello"})
        except MCPError as refused:
            return tools, refused.error.code, refused.error.message
        raise AssertionError("the call was not refused")

    assert run(gateway.url("/mix/mcp"), token, work) == (["add"], -32602, "Unknown tool: helper__echo")


def test_a_message_that_is_not_text_is_invalid_params(gateway, mix, member, scope_factory, token_for):
    token = caller(member, scope_factory, token_for, "dee", agent=True)

    async def work(client):
        try:
            await client.call_tool("helper__echo", {"data": {"x": 1}})
        except MCPError as refused:
            return refused.error.code, refused.error.message
        raise AssertionError("the call was not refused")

    assert run(gateway.url("/mix/mcp"), token, work) == (-32602, "message is text of 1 to 100000 characters.")


TASKS = "io.modelcontextprotocol/tasks"
META = {
    "io.modelcontextprotocol/clientInfo": {"name": "tasks-test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
}


def send(port: int, token: str, method: str, params: dict, declared: bool = True) -> dict:
    """The answer to a request of the 2026-07-28 revision that declares the tasks extension (unless not
    `declared`)."""
    meta = (
        META
        if declared
        else {"io.modelcontextprotocol/clientInfo": META["io.modelcontextprotocol/clientInfo"]}
    )
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
    headers = {"Authorization": f"Bearer {token}", "MCP-Protocol-Version": "2026-07-28"}
    status, _, body = post(port, "/mix/mcp", message, headers)
    assert status == 200, body
    return json.loads(body) if body.lstrip().startswith(b"{") else sse_messages(body)[0]


def test_an_agents_unfinished_task_is_an_mcp_task_cancelled_by_tasks_cancel(
    gateway, mix, member, scope_factory, token_for
):
    token = caller(member, scope_factory, token_for, "eve", agent=True)
    token_of_another = caller(member, scope_factory, token_for, "fay", agent=True)

    created = send(
        gateway.port, token, "tools/call", {"name": "helper__echo", "arguments": {"message": "wait"}}
    )
    task = created["result"]["taskId"]
    working = send(gateway.port, token, "tasks/get", {"taskId": task})["result"]
    foreign = send(gateway.port, token_of_another, "tasks/get", {"taskId": task})
    undeclared = send(gateway.port, token, "tasks/get", {"taskId": task}, declared=False)
    cancelled = send(gateway.port, token, "tasks/cancel", {"taskId": task})
    after = send(gateway.port, token, "tasks/get", {"taskId": task})["result"]

    assert (created["result"]["resultType"], created["result"]["status"]) == ("task", "working")
    assert task.startswith("registry-task.")
    assert (working["taskId"], working["status"]) == (task, "working")
    assert foreign["error"] == {"code": -32602, "message": "Failed to retrieve task: Task not found"}
    assert undeclared["error"] == {
        "code": -32021,
        "message": "Missing required client capability",
        "data": {"requiredCapabilities": {"extensions": {TASKS: {}}}},
    }
    assert cancelled["result"]["resultType"] == "complete"
    assert after["status"] == "cancelled"


def test_an_agents_question_is_an_input_request_answered_by_tasks_update(
    gateway, mix, member, scope_factory, token_for
):
    token = caller(member, scope_factory, token_for, "gus", agent=True)

    created = send(
        gateway.port, token, "tools/call", {"name": "helper__echo", "arguments": {"message": "ask"}}
    )
    task = created["result"]["taskId"]
    asked = send(gateway.port, token, "tasks/get", {"taskId": task})["result"]
    (key,) = asked["inputRequests"]
    responses = {key: {"action": "accept", "content": {"answer": "Luca"}}}
    updated = send(gateway.port, token, "tasks/update", {"taskId": task, "inputResponses": responses})
    done = send(gateway.port, token, "tasks/get", {"taskId": task})["result"]

    assert created["result"]["status"] == "input_required"
    assert asked["status"] == "input_required"
    assert asked["inputRequests"][key]["method"] == "elicitation/create"
    assert asked["inputRequests"][key]["params"]["message"] == "What is your name?"
    assert updated["result"]["resultType"] == "complete"
    assert done["status"] == "completed"
    assert done["result"]["content"] == [{"type": "text", "text": "Hello, Luca!"}]


@pytest.fixture
def old_mix(helper):
    helper_agent(helper, "/old-helper", "Old Helper", "0.3")
    return virtual_server_create(
        actor=None,
        path="/mix",
        definition={"name": "Mix", "agents": [{"agent": "/old-helper", "key": "old"}]},
    )


def test_an_agent_that_speaks_only_v0_3_is_called_and_asked_the_same_way(
    gateway, old_mix, member, scope_factory, token_for
):
    rules = [
        {"server": "/mix", "methods": ["*"], "tools": ["*"]},
        {"server": "/old-helper", "methods": ["*"]},
    ]
    scope_factory("old", group="old", server_rules=rules)
    token = token_for(member("oz", "old"))

    echoed = send(gateway.port, token, "tools/call", {"name": "old__echo", "arguments": {"message": "hello"}})
    created = send(gateway.port, token, "tools/call", {"name": "old__echo", "arguments": {"message": "ask"}})
    task = created["result"]["taskId"]
    asked = send(gateway.port, token, "tasks/get", {"taskId": task})["result"]
    (key,) = asked["inputRequests"]
    answer = {key: {"action": "accept", "content": {"answer": "Ada"}}}
    send(gateway.port, token, "tasks/update", {"taskId": task, "inputResponses": answer})
    done = send(gateway.port, token, "tasks/get", {"taskId": task})["result"]

    assert echoed["result"]["content"] == [{"type": "text", "text": "echo: hello"}]
    assert (created["result"]["status"], asked["status"]) == ("input_required", "input_required")
    assert done["result"]["content"] == [{"type": "text", "text": "Hello, Ada!"}]


def test_an_agent_that_speaks_only_http_json_is_called_and_its_task_got_and_cancelled(
    gateway, helper, member, scope_factory, token_for
):
    helper_agent(helper, "/rester", "Rester", "1.0", rest=True)
    virtual_server_create(
        actor=None, path="/mix", definition={"name": "Mix", "agents": [{"agent": "/rester", "key": "r"}]}
    )
    rules = [{"server": "/mix", "methods": ["*"], "tools": ["*"]}, {"server": "/rester", "methods": ["*"]}]
    scope_factory("rest", group="rest", server_rules=rules)
    token = token_for(member("ria", "rest"))
    before = len(helper.paths)

    echoed = send(gateway.port, token, "tools/call", {"name": "r__echo", "arguments": {"message": "hello"}})
    created = send(gateway.port, token, "tools/call", {"name": "r__echo", "arguments": {"message": "wait"}})
    task = created["result"]["taskId"]
    working = send(gateway.port, token, "tasks/get", {"taskId": task})["result"]
    send(gateway.port, token, "tasks/cancel", {"taskId": task})
    after = send(gateway.port, token, "tasks/get", {"taskId": task})["result"]

    assert echoed["result"]["content"] == [{"type": "text", "text": "echo: hello"}]
    assert (created["result"]["status"], working["status"], after["status"]) == (
        "working",
        "working",
        "cancelled",
    )
    sent = helper.paths[before:]
    assert sent[:2] == [("POST", "/rest/message:send")] * 2
    assert sent[2][0] == "GET" and sent[2][1].startswith("/rest/tasks/")
    assert sent[3][0] == "POST" and sent[3][1].endswith(":cancel")
    assert sent[4][0] == "GET"
