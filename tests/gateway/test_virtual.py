"""A virtual server through the gateway, with the official Python SDK client: two real MCP servers as
members (tests/mcp_servers.py), a tool renamed and described anew, a tool with a fixed argument, prompts,
resources and resource templates of one member, and the refusals: a fixed argument sent anyway, a tool the
caller may not call on its own server, a member removed while a session is open."""

import http.client
import json
import time

import anyio
import pytest
from django.db import connection
from mcp.shared.exceptions import MCPError

from servers.models import Server, Tool
from servers.services import server_delete, server_toggle
from tests.factories import ServerFactory, ToolFactory
from tests.gateway.gateway_calls import INITIALIZE, bearer, gateway_fixture, post, run, run_sse  # noqa: F401
from tests.mcp_servers import library_server_fixture, time_server_fixture  # noqa: F401
from virtual_servers.services import virtual_server_create

pytestmark = pytest.mark.django_db(transaction=True)

SEARCH_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "repository": {"type": "string"}},
    "required": ["query", "repository"],
}
EVERYTHING = [{"server": "*", "methods": ["*"], "tools": ["*"]}]


@pytest.fixture
def team(time_server, library_server):
    clock = ServerFactory(path="/clock", name="Clock", proxy_pass_url=time_server)
    library = ServerFactory(path="/library", name="Library", proxy_pass_url=library_server)
    for name in ("add", "echo", "current_time"):
        ToolFactory(server=clock, name=name)
    ToolFactory(server=library, name="search", input_schema=SEARCH_SCHEMA)
    ToolFactory(server=library, name="echo")
    return virtual_server_create(
        actor=None,
        path="/team",
        definition={
            "name": "Team tools",
            "description": "What the team uses.",
            "members": [
                {
                    "server": "/clock",
                    "tools": {"include": ["add", "current_time"]},
                    "prompts": {"include": []},
                    "resources": {"include": []},
                    "tool_settings": {"add": {"alias": "plus", "description": "Adds two numbers."}},
                },
                {
                    "server": "/library",
                    "tools": {"exclude": ["echo"]},
                    "tool_settings": {"search": {"alias": "search_api", "fixed": {"repository": "acme/api"}}},
                },
            ],
        },
    )


@pytest.fixture
def vic(team, member, scope_factory, token_for):
    scope_factory("everything", group="everyone", server_rules=EVERYTHING)
    return token_for(member("vic", "everyone"))


def test_a_client_lists_and_calls_the_members_tools_under_the_names_the_definition_gives(gateway, vic):
    async def work(client):
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        plus = (await client.call_tool("plus", {"a": 2, "b": 3})).content[0].text
        found = (await client.call_tool("search_api", {"query": "retries"})).content[0].text
        return tools, plus, found, client.server_info.name, client.instructions

    tools, plus, found, name, instructions = run(gateway.url("/team/mcp"), vic, work)

    assert sorted(tools) == ["current_time", "plus", "search_api"]
    assert tools["plus"].description == "Adds two numbers."
    assert tools["search_api"].input_schema["properties"] == {"query": {"title": "Query", "type": "string"}}
    assert tools["search_api"].input_schema["required"] == ["query"]
    assert (plus, found) == ("5", "acme/api: retries")
    assert (name, instructions) == ("Team tools", "What the team uses.")


def test_prompts_resources_and_templates_of_a_member_are_read_through_the_virtual_server(gateway, vic):
    async def work(client):
        prompts = [prompt.name for prompt in (await client.list_prompts()).prompts]
        prompt = await client.get_prompt("review", {"code": "x = 1"})
        resources = [str(resource.uri) for resource in (await client.list_resources()).resources]
        templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
        readme = await client.read_resource("file:///readme.md")
        page = await client.read_resource("file:///docs/intro")
        return prompts, prompt.messages[0].content.text, resources, templates, readme, page

    prompts, text, resources, templates, readme, page = run(gateway.url("/team/mcp"), vic, work)

    assert prompts == ["review"]
    assert text == "Please review: x = 1"
    assert resources == ["file:///readme.md"]  # one member carries resources: their URIs as they are
    assert templates == ["file:///docs/{name}"]
    assert readme.contents[0].text == "Read me first."
    assert page.contents[0].text == "The page intro."


def test_a_fixed_argument_sent_by_the_client_is_refused(gateway, vic):
    async def work(client):
        try:
            await client.call_tool("search_api", {"query": "q", "repository": "evil/fork"})
        except MCPError as refused:
            return refused.error

    error = run(gateway.url("/team/mcp"), vic, work)

    assert (error.code, error.message) == (-32602, "repository is fixed by /team and cannot be sent.")


def test_a_virtual_server_grants_no_more_than_its_members_do(gateway, team, member, scope_factory, token_for):
    scope_factory(
        "team", group="team-only", server_rules=[{"server": "/team", "methods": ["*"], "tools": ["*"]}]
    )
    scope_factory(
        "clock", group="team-only", server_rules=[{"server": "/clock", "methods": ["*"], "tools": ["*"]}]
    )
    val = token_for(member("val", "team-only"))

    async def work(client):
        tools = sorted(tool.name for tool in (await client.list_tools()).tools)
        try:
            await client.call_tool("search_api", {"query": "q"})
        except MCPError as refused:
            return tools, refused.error

    tools, error = run(gateway.url("/team/mcp"), val, work)

    assert tools == ["current_time", "plus"]
    assert error.code == -32001
    assert error.message == "Access denied: 'val' may not do this on server '/library'."


def test_a_member_removed_while_a_session_is_open_leaves_the_rest_usable(gateway, vic):
    def remove_library():  # in a worker thread, whose database connection is closed after
        try:
            server_delete(actor=None, server=Server.objects.get(path="/library"))
        finally:
            connection.close()

    async def work(client):
        before = sorted(tool.name for tool in (await client.list_tools()).tools)
        await anyio.to_thread.run_sync(remove_library)
        after = sorted(tool.name for tool in (await client.list_tools()).tools)
        plus = (await client.call_tool("plus", {"a": 1, "b": 1})).content[0].text
        try:
            await client.call_tool("search_api", {"query": "q"})
        except MCPError as refused:
            return before, after, plus, refused.error

    before, after, plus, error = run(gateway.url("/team/mcp"), vic, work)

    assert before == ["current_time", "plus", "search_api"]
    assert after == ["current_time", "plus"]
    assert plus == "2"
    assert (error.code, error.message) == (-32602, "Unknown tool: search_api")


def test_the_sse_transport_lists_and_calls_and_its_end_closes_the_session(gateway, vic):
    async def work(client):
        tools = sorted(tool.name for tool in (await client.list_tools()).tools)
        plus = (await client.call_tool("plus", {"a": 2, "b": 3})).content[0].text
        found = (await client.call_tool("search_api", {"query": "retries"})).content[0].text
        try:
            await client.call_tool("search_api", {"query": "x", "repository": "acme/web"})
        except MCPError as error:
            refused = error.error.message
        return tools, plus, found, refused, open_sessions()

    tools, plus, found, refused, during = run_sse(gateway.url("/team/sse"), vic, work)

    assert tools == ["current_time", "plus", "search_api"]
    assert (plus, found) == ("5", "acme/api: retries")
    assert refused == "repository is fixed by /team and cannot be sent."
    assert len(during) == 1
    assert wait_until(lambda: open_sessions() == [])  # the stream's end ended its session


def open_sessions() -> list[bytes]:
    """The records of /team's sessions (each with the hash of its members' sessions beside it)."""
    from django.conf import settings
    from redis import Redis

    from gateway.virtual.sessions import MEMBERS

    keys = Redis.from_url(settings.REDIS_URL).keys("registry:gateway:virtual:/team:*")
    return [key for key in keys if not key.endswith(MEMBERS.encode())]


def wait_until(check, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_post_to_an_sse_stream_of_another_caller_or_none_is_404(gateway, vic, member, token_for):
    other = token_for(member("oscar", "everyone"))
    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=10)
    connection.request("GET", "/team/sse", headers={**bearer(vic), "Accept": "text/event-stream"})
    stream = connection.getresponse()
    endpoint = stream.readline() + stream.readline()
    path = endpoint.decode().split("data: ", 1)[1].strip()
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}

    theirs = post(gateway.port, path, listing, bearer(other))
    nobodys = post(gateway.port, "/team/messages/?session_id=registry-virtual-sse-none", listing, bearer(vic))
    connection.close()

    assert (stream.status, endpoint.decode().split("\n")[0]) == (200, "event: endpoint")
    assert path.startswith("/team/messages/?session_id=registry-virtual-sse-")
    assert (theirs[0], json.loads(theirs[2])["error_code"]) == (404, "not_found")
    assert (nobodys[0], json.loads(nobodys[2])["error_code"]) == (404, "not_found")


def test_a_get_on_the_virtual_server_needs_a_session(gateway, vic):
    sessionless, sessionless_body = get(gateway.port, "/team/mcp", vic)

    assert (sessionless, json.loads(sessionless_body)["detail"]) == (
        400,
        "A stream belongs to a session: send Mcp-Session-Id.",
    )


def get(port: int, path: str, token: str, session_id: str | None = None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    extra = {"Mcp-Session-Id": session_id} if session_id else {}
    connection.request("GET", path, headers={**bearer(token), "Accept": "text/event-stream", **extra})
    response = connection.getresponse()
    return response.status, response.read()


def test_a_tool_the_registry_has_not_discovered_is_found_by_listing_when_first_called(gateway, vic):
    Tool.objects.filter(server__path="/clock").delete()  # as if discovery had not run yet

    async def work(client):
        return (await client.call_tool("current_time", {"timezone": "UTC"})).content[0].text

    assert run(gateway.url("/team/mcp"), vic, work).endswith("+00:00")


def test_a_2026_07_28_client_discovers_and_works_without_a_session(gateway, vic):
    async def work(client):
        tools = sorted(tool.name for tool in (await client.list_tools()).tools)
        plus = (await client.call_tool("plus", {"a": 4, "b": 4})).content[0].text
        found = (await client.call_tool("search_api", {"query": "q"})).content[0].text
        prompt = await client.get_prompt("review", {"code": "y = 2"})
        readme = await client.read_resource("file:///readme.md")
        return client.protocol_version, tools, plus, found, prompt.messages[0].content.text, readme

    version, tools, plus, found, prompt, readme = run(gateway.url("/team/mcp"), vic, work, mode="auto")

    assert (version, tools) == ("2026-07-28", ["current_time", "plus", "search_api"])
    assert (plus, found, prompt) == ("8", "acme/api: q", "Please review: y = 2")
    assert readme.contents[0].text == "Read me first."


def test_a_2026_07_28_list_is_private_to_its_caller_and_no_session_is_named(gateway, vic):
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    status, headers, body = post(
        gateway.port,
        "/team/mcp",
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}},
        bearer(vic, **{"MCP-Protocol-Version": "2026-07-28"}),
    )

    result = json.loads(body)["result"]
    assert (status, "mcp-session-id" in headers) == (200, False)
    assert (result["resultType"], result["cacheScope"], result["ttlMs"]) == ("complete", "private", 0)


@pytest.mark.parametrize(
    ("message", "said"),
    [
        (
            {"method": "tools/call", "params": {"name": "plus", "arguments": [1, 2]}},
            "arguments must be an object.",
        ),
        ({"method": "prompts/get", "params": {"name": {"x": 1}}}, "prompts/get needs params.name."),
        (
            {"method": "resources/read", "params": {"uri": {"x": 1}}},
            "Unknown resource: {'x': 1}",
        ),
        ({"method": "tools/call", "params": {"name": "x" * 5000}}, f"Unknown tool: {'x' * 200}"),
        ({"method": "completion/complete", "params": {}}, "Nothing to complete for {}"),
        (
            {"method": "completion/complete", "params": {"ref": {"type": "ref/prompt", "name": "nothing"}}},
            'Nothing to complete for {"type": "ref/prompt", "name": "nothing"}',
        ),
        (
            {"method": "sampling/createMessage", "params": {}},
            "sampling/createMessage is not served by virtual servers.",
        ),
    ],
)
def test_odd_requests_get_a_json_rpc_error_never_a_failure(gateway, vic, message, said):
    _, headers, _ = post(gateway.port, "/team/mcp", INITIALIZE, bearer(vic))
    session = {"Mcp-Session-Id": headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}

    status, _, body = post(
        gateway.port, "/team/mcp", {"jsonrpc": "2.0", "id": 9, **message}, bearer(vic, **session)
    )

    assert status == 200
    assert json.loads(body)["error"]["message"] == said


def test_a_disabled_member_is_left_out_until_enabled_again(gateway, vic):
    server_toggle(actor=None, server=Server.objects.get(path="/clock"), enabled=False)

    async def names(client):
        return sorted(tool.name for tool in (await client.list_tools()).tools)

    assert run(gateway.url("/team/mcp"), vic, names) == ["search_api"]


@pytest.fixture
def shelf(library_server, member, scope_factory, token_for):
    """A virtual server that leaves one resource of its member out, and a caller who may use it all."""
    ServerFactory(path="/library", name="Library", proxy_pass_url=library_server)
    virtual_server_create(
        actor=None,
        path="/shelf",
        definition={
            "name": "Shelf",
            "members": [{"server": "/library", "resources": {"exclude": ["file:///readme.md"]}}],
        },
    )
    scope_factory("everything", group="everyone", server_rules=EVERYTHING)
    return token_for(member("vic", "everyone"))


SPELLINGS = [
    "file:///readme.md",
    "FILE:///readme.md",
    "file:///./readme.md",
    "file:///%72eadme.md",
    "file:///docs/../readme.md",
    "file:///readme.md?x=1",
    "file:////readme.md",
]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_resource_the_definition_leaves_out_is_unreachable_by_every_method(gateway, shelf, mode):
    async def work(client):
        listed = [str(resource.uri) for resource in (await client.list_resources()).resources]
        refused = []
        for uri in SPELLINGS:
            try:
                await client.read_resource(uri)
            except MCPError as error:
                refused.append(error.message)
        page = await client.read_resource("file:///docs/intro")
        return listed, refused, page.contents[0].text

    listed, refused, page = run(gateway.url("/shelf/mcp"), shelf, work, mode=mode)

    assert listed == []
    assert refused == [f"Unknown resource: {uri}" for uri in SPELLINGS]
    assert page == "The page intro."  # what is not left out is still read


def test_completion_and_subscription_of_a_resource_left_out_are_refused(gateway, shelf):
    _, headers, _ = post(gateway.port, "/shelf/mcp", INITIALIZE, bearer(shelf))
    session = {"Mcp-Session-Id": headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
    complete = {
        "method": "completion/complete",
        "params": {
            "ref": {"type": "ref/resource", "uri": "file:///readme.md"},
            "argument": {"name": "x", "value": ""},
        },
    }
    subscribe = {"method": "resources/subscribe", "params": {"uri": "file:///readme.md"}}

    answers = [
        json.loads(
            post(
                gateway.port, "/shelf/mcp", {"jsonrpc": "2.0", "id": 9, **message}, bearer(shelf, **session)
            )[2]
        )
        for message in (complete, subscribe)
    ]

    assert [answer["error"]["message"] for answer in answers] == [
        'Nothing to complete for {"type": "ref/resource", "uri": "file:///readme.md"}',
        "Unknown resource: file:///readme.md",
    ]
