"""The official TypeScript SDK's client at a virtual server of two members (tests/conformance/
virtual_host.mjs): an aliased tool with a fixed argument listed and called, a prompt, a resource of each
member, and a member's elicitation and sampling requests answered by the host."""

import json
import subprocess

import pytest

from tests.conformance.suite import NODE
from tests.gateway.gateway_calls import gateway_fixture  # noqa: F401
from tests.gateway.test_virtual_streams import desk_server, studio  # noqa: F401
from tests.mcp_servers import library_server_fixture  # noqa: F401
from tests.oauth.test_typescript_host import PEERS, SDK

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_typescript_sdk_uses_a_virtual_server_of_two_members(gateway, studio):  # noqa: F811
    if not (NODE.exists() and SDK.exists()):
        pytest.fail("Node 22 and @modelcontextprotocol/sdk are missing: `make test` installs them (npm ci).")

    host = subprocess.run(
        [str(NODE), str(PEERS / "virtual_host.mjs"), gateway.url("/studio/mcp"), studio],
        capture_output=True,
        text=True,
        timeout=120,
    )

    said = json.loads(host.stdout.strip().splitlines()[-1])
    assert "error" not in said, said["error"]
    assert said["protocol"] == "2025-11-25"
    assert said["tools"] == ["ask_reader", "find", "shelve", "summarize", "touch"]
    assert said["findSchema"]["properties"] == {"query": {"title": "Query", "type": "string"}}
    assert said["found"] == "acme/api: retries"
    assert said["prompt"] == "Please review: z = 3"
    assert said["resources"] == ["desk+file:///readme.md", "library+file:///readme.md"]
    assert (said["desk"], said["library"]) == ("A note on the desk.", "Read me first.")
    assert said["asked"] == "accept: green, to 'Colour?'"
    assert said["summary"] == "summary: A lo"
