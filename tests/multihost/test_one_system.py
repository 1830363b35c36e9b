"""Processes on different hosts behave as one registry: what one web host writes, the other serves at once;
a check run by a worker on its own host reaches a websocket on a web host; an MCP session opened through
one web host continues through the other; metrics sent to either metrics host are stored exactly once.
Every request crosses the lab's network (tests/multihost/system.py)."""

import asyncio
import json
import time
import uuid

import requests
from websockets.asyncio.client import connect

from tests.gateway.gateway_calls import INITIALIZE, INITIALIZED, sse_messages
from tests.multihost.system import HEALTH_TIMEOUT, METRICS_SERVICE, REDIS_PORT
from tests.waiting import wait_for

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}


def mcp_post(system, base: str, path: str, message: dict, session: str | None = None):
    headers = {**MCP_HEADERS, **system.auth(), **({"Mcp-Session-Id": session} if session else {})}
    return requests.post(f"{base}{path}/mcp", json=message, headers=headers, timeout=30)


def answer_of(response) -> dict:
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return sse_messages(response.content)[-1]
    return response.json()


def test_a_server_registered_on_one_web_host_is_served_by_the_other_at_once(system):
    web_a, web_b = system.web_url("web-a"), system.web_url("web-b")
    system.register("/abacus", base=web_a, name="Abacus")
    listed = requests.get(
        f"{web_b}/v0.1/servers", params={"search": "abacus"}, headers=system.auth(), timeout=10
    ).json()
    opened = mcp_post(system, web_b, "/abacus", INITIALIZE)
    session = opened.headers["mcp-session-id"]
    mcp_post(system, web_b, "/abacus", INITIALIZED, session)
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 2, "b": 3}},
    }
    added = answer_of(mcp_post(system, web_b, "/abacus", call, session))
    found = requests.post(
        f"{web_b}/api/search/semantic",
        json={"query": "a server that adds numbers", "entity_types": ["mcp_server"], "max_results": 5},
        headers=system.auth(),
        timeout=60,
    ).json()

    assert [entry["server"]["title"] for entry in listed["servers"]] == ["Abacus"]
    assert opened.status_code == 200
    assert added["result"]["content"] == [{"type": "text", "text": "5"}]
    assert "/abacus" in [result["path"] for result in found["results"]]


def test_an_mcp_session_opened_through_one_web_host_continues_through_the_other(system):
    system.register("/relay")
    web_a, web_b = system.web_url("web-a"), system.web_url("web-b")

    opened = mcp_post(system, web_a, "/relay", INITIALIZE)
    session = opened.headers["mcp-session-id"]
    initialized = mcp_post(system, web_b, "/relay", INITIALIZED, session)
    call = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hop"}},
    }
    echoed = answer_of(mcp_post(system, web_b, "/relay", call, session))
    listed = answer_of(
        mcp_post(system, web_a, "/relay", {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}, session)
    )

    assert (opened.status_code, initialized.status_code) == (200, 202)
    assert echoed["result"]["content"] == [{"type": "text", "text": "hop"}]
    assert [tool["name"] for tool in listed["result"]["tools"]] == ["add", "echo"]


def test_a_health_change_found_by_a_worker_host_reaches_a_websocket_on_a_web_host(system):
    system.register("/beacon")
    wait_for(lambda: _status(system, "/beacon") == "healthy", timeout=HEALTH_TIMEOUT, what="first check")
    url = f"ws://{system.address('web-b')}:8000/ws/health_status"

    async def watch() -> dict:
        async with connect(url, open_timeout=10) as socket:
            snapshot = json.loads(await socket.recv())
            assert snapshot["/beacon"]["status"] == "healthy"
            system.mcp_control("fail", on="1")
            refreshed = requests.post(
                f"{system.url}/api/internal/healthcheck", headers=system.basic(), timeout=10
            )
            assert refreshed.status_code == 200, refreshed.text
            deadline = time.monotonic() + HEALTH_TIMEOUT
            while time.monotonic() < deadline:
                message = json.loads(await asyncio.wait_for(socket.recv(), HEALTH_TIMEOUT))
                if message.get("/beacon", {}).get("status", "healthy") != "healthy":
                    return message["/beacon"]
            raise AssertionError("no health change reached the websocket")

    try:
        changed = asyncio.run(watch())
        checkers = {call["peer"] for call in system.mcp_calls()}
    finally:
        system.mcp_control("fail", on="0")

    assert changed["status"].startswith("unhealthy")
    assert checkers <= {
        system.address("worker-a"),
        system.address("worker-b"),
        system.address("web-a"),
        system.address("web-b"),
    }
    assert checkers & {system.address("worker-a"), system.address("worker-b")}


def test_metrics_sent_to_either_metrics_host_are_stored_exactly_once(system):
    run = uuid.uuid4().hex
    headers = {"X-API-Key": system.metrics_key}
    accepted = 0
    for index in range(40):
        host = ("web-a", "web-b")[index % 2]
        batch = {
            "service": METRICS_SERVICE,
            "metrics": [{"type": "custom", "value": index, "dimensions": {"run": run}}] * 5,
        }
        answer = requests.post(
            f"{system.metrics_host_url(host)}/metrics", json=batch, headers=headers, timeout=10
        )
        assert answer.status_code == 202, answer.text
        accepted += answer.json()["accepted"]
    count = (
        f"SELECT count(*), count(DISTINCT id) FROM metrics_genericmetric WHERE dimensions->>'run' = '{run}'"
    )

    wait_for(lambda: system.sql(count).split("|")[0] == str(accepted), timeout=30, what="the flush")
    time.sleep(3)  # later flushes (on both workers) write nothing more

    assert accepted == 200
    assert system.sql(count) == "200|200"


def _status(system, path: str) -> str:
    listed = requests.get(f"{system.url}/api/internal/list", headers=system.basic(), timeout=10).json()
    return next((s["health_status"] for s in listed["services"] if s["path"] == path), "")


def _kill_pushes(system) -> int:
    """The fault: every process's subscription to the pushed epochs and sessions dropped at once."""
    import redis

    master = system.hosts[system.redis_master()].address
    client = redis.Redis(master, REDIS_PORT, password=system.redis_password, socket_timeout=5)
    try:
        return client.client_kill_filter(_type="pubsub")
    finally:
        client.close()


def _toggle(system, base: str, path: str, enabled: bool) -> None:
    answer = requests.post(
        f"{base}/api/internal/toggle",
        json={"service_path": path, "enabled": enabled},
        headers=system.basic(),
        timeout=30,
    )
    assert answer.status_code == 200, answer.text


def _refused_within(seconds: float, send) -> None:
    """`send()` is answered with anything but 200 or 202 within `seconds` from now."""
    wait_for(lambda: send().status_code not in (200, 202), timeout=seconds, interval=0.02, what="refused")


def test_an_ended_session_and_a_disabled_server_are_refused_by_the_other_web_host_within_a_second(system):
    """Each web process keeps epochs and session owners pushed to it (core/epoch_watch.py): a change made
    through one host is enforced by the other within a second, also when the push is lost just then."""
    web_a, web_b = system.web_url("web-a"), system.web_url("web-b")
    system.register("/pushed")
    listing = {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}
    for fault in (False, True):
        session = mcp_post(system, web_a, "/pushed", INITIALIZE).headers["mcp-session-id"]
        mcp_post(system, web_a, "/pushed", INITIALIZED, session)
        assert mcp_post(system, web_b, "/pushed", listing, session).status_code == 200  # owner known on b
        if fault:
            assert _kill_pushes(system) >= 2  # the subscriptions of both web hosts at least
        headers = {**MCP_HEADERS, **system.auth(), "Mcp-Session-Id": session}
        assert requests.delete(f"{web_a}/pushed/mcp", headers=headers, timeout=10).status_code in (200, 204)
        _refused_within(1.0, lambda s=session: mcp_post(system, web_b, "/pushed", listing, s))

        assert mcp_post(system, web_b, "/pushed", INITIALIZE).status_code == 200
        if fault:
            _kill_pushes(system)
        _toggle(system, web_a, "/pushed", False)
        _refused_within(1.0, lambda: mcp_post(system, web_b, "/pushed", INITIALIZE))
        _toggle(system, web_a, "/pushed", True)
        wait_for(
            lambda: mcp_post(system, web_b, "/pushed", INITIALIZE).status_code == 200,
            timeout=1.0,
            interval=0.02,
            what="enabled again",
        )


def test_a_limit_counts_exactly_across_web_hosts_and_a_quarantine_saved_on_one_is_enforced_by_both(system):
    """The count is taken in the lab's Redis (through its Sentinels) whichever web host a call reaches, and
    a quarantine saved through one host refuses calls at the other within a second."""
    web_a, web_b = system.web_url("web-a"), system.web_url("web-b")
    system.register("/metered")
    saved = requests.post(
        f"{web_a}/api/internal/limits",
        json={"target_kind": "server", "target": "/metered", "windows": [{"per": "day", "limit": 5}]},
        headers=system.basic(),
        timeout=10,
    )
    assert saved.status_code == 201, saved.text
    session = mcp_post(system, web_a, "/metered", INITIALIZE).headers["mcp-session-id"]
    mcp_post(system, web_a, "/metered", INITIALIZED, session)
    call = {
        "jsonrpc": "2.0",
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 1}},
    }

    def send(base: str, request_id: int):
        return mcp_post(system, base, "/metered", {**call, "id": request_id}, session)

    quarantine = None
    try:
        # the day's window: the test cannot straddle its edge but at midnight UTC
        statuses = [send((web_a, web_b)[n % 2], n).status_code for n in range(8)]
        lifted = requests.delete(
            f"{web_b}/api/internal/limits/{saved.json()['id']}", headers=system.basic(), timeout=10
        )
        wait_for(lambda: send(web_a, 20).status_code == 200, timeout=1.0, interval=0.02, what="limit gone")
        quarantine = requests.post(
            f"{web_a}/api/internal/quarantines",
            json={"kind": "server", "name": "/metered", "reason": "under review"},
            headers=system.basic(),
            timeout=10,
        ).json()
        _refused_within(1.0, lambda: send(web_b, 21))
        refused = send(web_b, 22)
    finally:
        if quarantine is not None:
            requests.delete(
                f"{web_a}/api/internal/quarantines/{quarantine['id']}", headers=system.basic(), timeout=10
            )

    assert statuses == [200] * 5 + [429] * 3
    assert lifted.status_code == 204
    assert (refused.status_code, refused.json()["detail"]) == (
        403,
        "Quarantined by an operator: under review",
    )
