"""What a virtual server's members send its clients through the gateway, with the official Python SDK
client: a member's elicitation and sampling requests reach the client and its answers reach the member;
a member's list change reaches the client on its GET stream and its next list is the new one; two
members' resources are told apart by their keys, and a member's notice about one names it so."""

import http.client
import json
import time

import anyio
import mcp_types as types
import pytest

from tests.factories import ServerFactory
from tests.gateway.gateway_calls import INITIALIZE, bearer, gateway_fixture, post, run, run_sse  # noqa: F401
from tests.mcp_servers import _serve, asgi_body, desk_app, library_server_fixture  # noqa: F401
from virtual_servers.services import virtual_server_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def desk_server():
    running = _serve(desk_app())  # its own: a test adds tools to it
    yield running.url("/mcp")
    running.stop()


@pytest.fixture
def studio(desk_server, library_server, member, scope_factory, token_for):
    ServerFactory(path="/desk", name="Desk", proxy_pass_url=desk_server)
    ServerFactory(path="/library", name="Library", proxy_pass_url=library_server)
    virtual_server_create(
        actor=None,
        path="/studio",
        definition={
            "name": "Studio",
            "members": [
                {"server": "/desk", "prompts": {"include": []}},
                {
                    "server": "/library",
                    "tools": {"include": ["search"]},
                    "tool_settings": {"search": {"alias": "find", "fixed": {"repository": "acme/api"}}},
                },
            ],
        },
    )
    scope_factory(
        "everything", group="everyone", server_rules=[{"server": "*", "methods": ["*"], "tools": ["*"]}]
    )
    return token_for(member("stu", "everyone"))


async def answer_questions(context, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"text": f"blue, to '{params.message}'"})


async def summarize_text(context, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    asked = params.messages[0].content.text
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text=asked[:5]), model="test-model"
    )


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_a_members_elicitation_and_sampling_reach_the_client_and_its_answers_the_member(
    gateway, studio, mode
):
    async def work(client):
        asked = await client.call_tool("ask_reader", {"question": "Favourite colour?"})
        summary = await client.call_tool("summarize", {"text": "A long story."})
        return asked.content[0].text, summary.content[0].text

    asked, summary = run(
        gateway.url("/studio/mcp"),
        studio,
        work,
        elicitation_callback=answer_questions,
        sampling_callback=summarize_text,
    )

    assert asked == "accept: blue, to 'Favourite colour?'"
    assert summary == "summary: A lon"


def test_a_members_list_change_reaches_the_client_and_its_next_list_is_the_new_one(gateway, studio):
    async def work(client):
        before = sorted(tool.name for tool in (await client.list_tools()).tools)
        await client.call_tool("shelve", {"name": "poetry"})
        with anyio.fail_after(15):
            await changed.wait()
        after = sorted(tool.name for tool in (await client.list_tools()).tools)
        return before, after

    changed = anyio.Event()

    async def note(message) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    before, after = run(gateway.url("/studio/mcp"), studio, work, message_handler=note)

    assert before == ["ask_reader", "find", "shelve", "summarize", "touch"]
    assert after == ["ask_reader", "find", "poetry", "shelve", "summarize", "touch"]


def test_over_the_sse_transport_a_members_requests_and_list_changes_reach_the_client(gateway, studio):
    async def work(client):
        asked = await client.call_tool("ask_reader", {"question": "Favourite colour?"})
        summary = await client.call_tool("summarize", {"text": "A long story."})
        await client.call_tool("shelve", {"name": "poetry"})
        with anyio.fail_after(15):
            await changed.wait()
        after = sorted(tool.name for tool in (await client.list_tools()).tools)
        return asked.content[0].text, summary.content[0].text, after

    changed = anyio.Event()

    async def note(message) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    asked, summary, after = run_sse(
        gateway.url("/studio/sse"),
        studio,
        work,
        elicitation_callback=answer_questions,
        sampling_callback=summarize_text,
        message_handler=note,
    )

    assert asked == "accept: blue, to 'Favourite colour?'"
    assert summary == "summary: A lon"
    assert after == ["ask_reader", "find", "poetry", "shelve", "summarize", "touch"]


def test_two_members_resources_are_told_apart_by_key_and_a_notice_names_the_one_it_is_about(gateway, studio):
    async def work(client):
        listed = sorted(str(resource.uri) for resource in (await client.list_resources()).resources)
        desk = await client.read_resource("desk+file:///readme.md")
        library = await client.read_resource("library+file:///readme.md")
        await client.call_tool("touch", {"uri": "file:///readme.md"})
        with anyio.fail_after(15):
            await touched.wait()
        return listed, desk.contents[0].text, library.contents[0].text

    touched = anyio.Event()
    notices: list[str] = []

    async def note(message) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            notices.append(str(message.params.uri))
            touched.set()

    listed, desk, library = run(gateway.url("/studio/mcp"), studio, work, message_handler=note)

    assert listed == ["desk+file:///readme.md", "library+file:///readme.md"]
    assert (desk, library) == ("A note on the desk.", "Read me first.")
    assert notices == ["desk+file:///readme.md"]


def test_an_answer_to_nothing_a_member_asked_is_taken_and_goes_nowhere(gateway, studio):
    _, headers, _ = post(gateway.port, "/studio/mcp", INITIALIZE, bearer(studio))
    session = {"Mcp-Session-Id": headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
    answers = [
        {"jsonrpc": "2.0", "id": "registry-virtual:nobody:1", "result": {}},
        {"jsonrpc": "2.0", "id": "registry-virtual:desk:not json", "result": {}},
        {"jsonrpc": "2.0", "id": 7, "result": {}},
    ]

    statuses = [post(gateway.port, "/studio/mcp", answer, bearer(studio, **session))[0] for answer in answers]

    assert statuses == [202, 202, 202]


def test_a_stream_resumed_with_an_id_of_no_member_is_refused(gateway, studio):
    _, headers, _ = post(gateway.port, "/studio/mcp", INITIALIZE, bearer(studio))
    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=10)
    connection.request(
        "GET",
        "/studio/mcp",
        headers={
            **bearer(studio),
            "Accept": "text/event-stream",
            "Mcp-Session-Id": headers["mcp-session-id"],
            "Last-Event-ID": "registry-virtual:nobody:3",
        },
    )
    response = connection.getresponse()

    assert (response.status, json.loads(response.read())["detail"]) == (
        400,
        "Last-Event-ID names no stream of this virtual server.",
    )


def slow_stream_app():
    """A member whose every answer is an event stream sent in pieces: a comment first, the answer later."""

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        body = await asgi_body(receive)
        request = json.loads(body) if body else {}
        if "id" not in request:
            await send({"type": "http.response.start", "status": 202, "headers": []})
            return await send({"type": "http.response.body", "body": b""})
        result = {"tools": [{"name": "late", "inputSchema": {"type": "object"}}]}
        if request["method"] == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "serverInfo": {"name": "s", "version": "1"},
            }
        headers = [(b"content-type", b"text/event-stream"), (b"mcp-session-id", b"slow-session")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b": thinking\n\n", "more_body": True})
        await anyio.sleep(0.3)
        answer = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()
        await send({"type": "http.response.body", "body": b"event: message\ndata: " + answer + b"\n\n"})

    return app


def test_a_members_answer_that_arrives_in_pieces_is_read_to_its_end(
    gateway, member, scope_factory, token_for
):
    slow = _serve(slow_stream_app())
    try:
        ServerFactory(path="/slow", name="Slow", proxy_pass_url=slow.url("/mcp"))
        virtual_server_create(
            actor=None, path="/patient", definition={"name": "P", "members": [{"server": "/slow"}]}
        )
        scope_factory(
            "everything", group="everyone", server_rules=[{"server": "*", "methods": ["*"], "tools": ["*"]}]
        )
        token = token_for(member("pat", "everyone"))

        async def work(client):
            return [tool.name for tool in (await client.list_tools()).tools]

        assert run(gateway.url("/patient/mcp"), token, work) == ["late"]
    finally:
        slow.stop()


def test_a_virtual_servers_stream_holds_a_slot_of_its_callers_fair_share(gateway, studio, settings):
    from gateway import fair_share

    settings.GATEWAY_MAX_STREAMS_PER_CALLER = 1

    def stream(session_id: str):
        connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=10)
        stream_headers = {
            **bearer(studio),
            "Accept": "text/event-stream",
            "Mcp-Session-Id": session_id,
            "MCP-Protocol-Version": "2025-11-25",
        }
        connection.request("GET", "/studio/mcp", headers=stream_headers)
        return connection, connection.getresponse()

    sessions = [
        post(gateway.port, "/studio/mcp", INITIALIZE, bearer(studio))[1]["mcp-session-id"] for _ in "ab"
    ]
    held, first = stream(sessions[0])
    over, second = stream(sessions[1])
    refused = json.loads(second.read())
    held_then = fair_share.held()
    held.close()
    over.close()
    deadline = time.monotonic() + 5
    while fair_share.held() and time.monotonic() < deadline:
        time.sleep(0.05)

    assert first.status == 200
    assert (second.status, second.getheader("Retry-After"), refused["error_code"]) == (429, "1", "throttled")
    assert [count for (kind, _), count in held_then.items() if kind == "caller"] == [1]
    assert fair_share.held() == {}
