"""Limits and quarantine across two real web processes on the same database and Redis: the counts are
exact whichever process each call reaches, and a quarantine saved in a third process is applied by both
within a second."""

import json
import time

import pytest

from limits.services import limit_set, quarantine_set
from tests.factories import ServerFactory
from tests.gateway.gateway_calls import bearer, open_session, post
from tests.processes import ProcessGroup, free_ports, wait_healthy
from tests.shifting_tools import ShiftingTools

pytestmark = [pytest.mark.stack, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def webs(tmp_path):
    ports = free_ports(2)
    group = ProcessGroup(tmp_path)
    try:
        started = [
            group.web(f"web{n}", port, "registry_site.asgi:application") for n, port in enumerate(ports)
        ]
        for port, web in zip(ports, started, strict=True):
            wait_healthy(port, web)
        yield ports
    finally:
        group.stop()


@pytest.fixture
def upstream():
    server = ShiftingTools().start()
    ServerFactory(path="/alpha", proxy_pass_url=server.url)
    yield server
    server.stop()


def call(port: int, token: str, session: str, request_id: int) -> tuple[int, bytes]:
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {}},
    }
    status, _, answer = post(port, "/alpha/mcp", body, bearer(token, **{"Mcp-Session-Id": session}))
    return status, answer


def test_counts_are_exact_across_processes_and_a_quarantine_reaches_both_within_a_second(
    webs, upstream, member, scope_factory, token_for, admin_user
):
    scope_factory("all", group="agents", server_rules=[{"server": "*", "methods": ["*"], "tools": ["*"]}])
    token = token_for(member("ana", "agents"))
    # a day's window: the test cannot straddle its edge but at midnight UTC
    limit_set(actor=None, caller_kind="user", caller="ana", windows=[{"per": "day", "limit": 5}])

    session = open_session(webs[0], token, "/alpha/mcp")  # one session, served by both processes
    statuses = [call(webs[n % 2], token, session, n)[0] for n in range(8)]
    quarantine_set(actor=admin_user, kind="user", name="ana", reason="stopped")
    deadline, refused = time.monotonic() + 1.0, set()
    while refused != {0, 1} and time.monotonic() < deadline:
        for index, port in enumerate(webs):
            status, answer = call(port, token, session, 99)
            if status == 403 and json.loads(answer)["detail"] == "Quarantined by an operator: stopped":
                refused.add(index)

    assert statuses == [200] * 5 + [429] * 3
    assert upstream.calls == ["echo"] * 5
    assert refused == {0, 1}
