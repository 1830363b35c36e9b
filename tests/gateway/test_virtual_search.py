"""Search-then-call on a virtual server, with the official Python SDK client against two real MCP servers:
its `tools/list` is two tools; `search_tools` ranks, by meaning, only the tools the caller's own list would
show (under the names and descriptions the definition gives); `call_tool` is judged exactly as a direct
call, so a tool the caller may not call, or one the operators blocked, is refused with the same code and
words either way."""

import pytest
from mcp.shared.exceptions import MCPError

from servers.models import Server
from servers.services.tool_blocks import tool_block
from tests.factories import ServerFactory, ToolFactory
from tests.gateway.gateway_calls import gateway_fixture, run  # noqa: F401
from tests.mcp_servers import library_server_fixture, time_server_fixture  # noqa: F401
from virtual_servers.services import virtual_server_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def kit(time_server, library_server):
    clock = ServerFactory(path="/clock", name="Clock", proxy_pass_url=time_server)
    library = ServerFactory(path="/library", name="Library", proxy_pass_url=library_server)
    for name in ("add", "echo", "current_time"):
        ToolFactory(server=clock, name=name)
    ToolFactory(server=library, name="search")
    return virtual_server_create(
        actor=None,
        path="/kit",
        definition={
            "name": "Kit",
            "tool_search": True,
            "members": [
                {
                    "server": "/clock",
                    "tool_settings": {"add": {"alias": "plus", "description": "Adds two numbers together."}},
                },
                {"server": "/library", "tools": {"include": ["search"]}},
            ],
        },
    )


def caller(member, scope_factory, token_for, name: str, tools: list[str]) -> str:
    scope_factory(
        f"{name}-kit",
        group=name,
        server_rules=[
            {"server": "/kit", "methods": ["*"], "tools": tools},
            {"server": "/clock", "methods": ["*"], "tools": ["*"]},
            {"server": "/library", "methods": ["*"], "tools": ["*"]},
        ],
    )
    return token_for(member(name, name))


async def search(client, query: str, limit: int = 10) -> list[dict]:
    found = await client.call_tool("search_tools", {"query": query, "limit": limit})
    return found.structured_content["tools"]


async def refusal(client, name: str, arguments: dict):
    try:
        await client.call_tool(name, arguments)
    except MCPError as refused:
        return refused.error.code, refused.error.message
    raise AssertionError(f"{name} was not refused")


def test_the_list_is_two_tools_search_finds_by_meaning_and_call_tool_calls(
    gateway, kit, member, scope_factory, token_for
):
    token = caller(member, scope_factory, token_for, "sam", ["*"])

    async def work(client):
        listed = sorted(tool.name for tool in (await client.list_tools()).tools)
        adding = await search(client, "sum of two numbers", limit=2)
        timing = await search(client, "what time is it now", limit=1)
        called = await client.call_tool("call_tool", {"name": "plus", "arguments": {"a": 2, "b": 3}})
        return listed, adding, timing, called.content[0].text

    listed, adding, timing, called = run(gateway.url("/kit/mcp"), token, work)

    assert listed == ["call_tool", "search_tools"]
    assert adding[0]["name"] == "plus"
    assert adding[0]["description"] == "Adds two numbers together."
    assert sorted(adding[0]["inputSchema"]["properties"]) == ["a", "b"]
    assert 0 < adding[0]["score"] <= 1 and adding[0]["score"] >= adding[1]["score"]
    assert [tool["name"] for tool in timing] == ["current_time"]
    assert called == "5"


def test_search_never_shows_a_tool_the_caller_may_not_call_and_call_tool_refuses_it_as_a_direct_call(
    gateway, kit, member, scope_factory, token_for
):
    token = caller(member, scope_factory, token_for, "pia", ["plus", "search"])

    async def work(client):
        found = await search(client, "what time is it now", limit=50)
        wrapped = await refusal(client, "call_tool", {"name": "current_time", "arguments": {}})
        direct = await refusal(client, "current_time", {})
        return found, wrapped, direct

    found, wrapped, direct = run(gateway.url("/kit/mcp"), token, work)

    assert sorted(tool["name"] for tool in found) == ["plus", "search"]
    assert wrapped == direct
    assert wrapped[0] == -32001


def test_a_tool_the_operators_blocked_is_neither_found_nor_called(
    gateway, kit, member, scope_factory, token_for
):
    tool_block(actor=None, server=Server.objects.get(path="/clock"), name="echo", reason="leaks")
    token = caller(member, scope_factory, token_for, "bo", ["*"])

    async def work(client):
        found = await search(client, "repeat the message back", limit=50)
        wrapped = await refusal(client, "call_tool", {"name": "echo", "arguments": {"message": "hi"}})
        direct = await refusal(client, "echo", {"message": "hi"})
        return found, wrapped, direct

    found, wrapped, direct = run(gateway.url("/kit/mcp"), token, work)

    assert "echo" not in [tool["name"] for tool in found]
    assert wrapped == direct


@pytest.mark.parametrize(
    ("name", "arguments", "said"),
    [
        ("search_tools", {"query": ""}, "search_tools needs a query: text of 1 to 1000 characters."),
        ("search_tools", {"query": "x", "limit": 0}, "limit is a whole number of 1 to 50."),
        (
            "call_tool",
            {"arguments": {}},
            "call_tool needs arguments.name, the name of a tool search_tools found.",
        ),
        ("call_tool", {"name": "plus", "arguments": [1]}, "arguments must be an object."),
        ("call_tool", {"name": "nothing_here"}, "Unknown tool: nothing_here"),
    ],
)
def test_bad_arguments_are_invalid_params_with_their_reason(
    gateway, kit, member, scope_factory, token_for, name, arguments, said
):
    token = caller(member, scope_factory, token_for, "al", ["*"])

    async def work(client):
        return await refusal(client, name, arguments)

    assert run(gateway.url("/kit/mcp"), token, work) == (-32602, said)
