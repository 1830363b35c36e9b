"""A virtual server answers every request of a session, however many arrive at once and in whatever
order: the first requests of a fresh session (which open the members' sessions) included."""

import asyncio
import json

import httpx
import pytest

from tests.factories import ServerFactory, ToolFactory
from tests.gateway.gateway_calls import INITIALIZE, bearer, gateway_fixture, post  # noqa: F401
from tests.mcp_servers import library_server_fixture, time_server_fixture  # noqa: F401
from virtual_servers.services import virtual_server_create

pytestmark = pytest.mark.django_db(transaction=True)

EVERYTHING = [{"server": "*", "methods": ["*"], "tools": ["*"]}]


@pytest.fixture
def vic(time_server, library_server, member, scope_factory, token_for):
    clock = ServerFactory(path="/clock", name="Clock", proxy_pass_url=time_server)
    library = ServerFactory(path="/library", name="Library", proxy_pass_url=library_server)
    for name in ("add", "echo", "current_time"):
        ToolFactory(server=clock, name=name)
    ToolFactory(server=library, name="search")
    virtual_server_create(
        actor=None,
        path="/team",
        definition={
            "name": "Team",
            "members": [{"server": "/clock"}, {"server": "/library", "tools": {"exclude": ["echo"]}}],
        },
    )
    scope_factory("everything", group="everyone", server_rules=EVERYTHING)
    return token_for(member("vic", "everyone"))


async def _at_once(url: str, headers: dict, messages: list[dict]) -> list:
    async with httpx.AsyncClient(timeout=httpx.Timeout(15)) as client:

        async def one(message):
            try:
                answer = await client.post(url, json=message, headers=headers)
            except httpx.TimeoutException:
                return "timed out"
            text = answer.text
            if answer.headers.get("content-type", "").startswith("text/event-stream"):
                text = next(line[6:] for line in text.splitlines() if line.startswith("data: "))
            return json.loads(text)

        return await asyncio.gather(*(one(message) for message in messages))


def test_requests_sent_at_once_on_a_fresh_session_are_each_answered(gateway, vic):
    for _ in range(5):
        _, headers, _ = post(gateway.port, "/team/mcp", INITIALIZE, bearer(vic))
        session = {
            "Mcp-Session-Id": headers["mcp-session-id"],
            "MCP-Protocol-Version": "2025-11-25",
            "Accept": "application/json, text/event-stream",
        }
        requests = [{"jsonrpc": "2.0", "id": n, "method": "tools/list"} for n in range(1, 4)]
        requests.append(
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
            }
        )

        answers = asyncio.run(_at_once(gateway.url("/team/mcp"), bearer(vic, **session), requests))

        assert [answer if answer == "timed out" else answer.get("id") for answer in answers] == [1, 2, 3, 4]
        assert [sorted(tool["name"] for tool in answer["result"]["tools"]) for answer in answers[:3]] == [
            ["add", "current_time", "echo", "search"]
        ] * 3
        assert answers[3]["result"]["content"][0]["text"] == "3"
