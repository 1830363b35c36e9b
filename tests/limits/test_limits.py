"""Limits and quarantine through the gateway, with a real MCP server, the official SDK and raw HTTP
(limits/decision.py decides, gateway/quotas.py answers): exact counts at each window edge, the tightest
window first with a denied call using up no window, each member of a group counted on its own, a caller ×
target limit independent of the caller's other targets, a target's limit shared by every caller,
quarantine taking effect mid-session, and Redis failing open or closed as each limit says."""

import json
import re

import pytest
import redis
from mcp.shared.exceptions import MCPError

from accounts.models import AuditEvent
from core import redis_clients, redis_pipe, redis_url
from limits import counting
from limits.rules import LimitRefused
from limits.services import limit_set, quarantine_lift, quarantine_set
from metrics import aggregates
from tests.factories import ServerFactory
from tests.gateway.gateway_calls import (  # noqa: F401
    INITIALIZE,
    bearer,
    gateway_fixture,
    open_session,
    post,
    run,
    sse_messages,
)
from tests.redis_server import RedisServer
from tests.shifting_tools import ShiftingTools
from virtual_servers.services import virtual_server_create

pytestmark = pytest.mark.django_db(transaction=True)

EVERYTHING = [{"server": "*", "methods": ["*"], "tools": ["*"]}]
MINUTE_START = 1_800_000_000.0  # a minute's first second, so the tests know where windows end


@pytest.fixture
def clock(monkeypatch):
    """The limits' clock (fixed windows follow it): starts at MINUTE_START, moved by the test."""

    class Clock:
        now = MINUTE_START + 0.25

    monkeypatch.setattr(counting, "now", lambda: Clock.now)
    return Clock


@pytest.fixture
def upstreams():
    """Two real MCP servers registered at /alpha and /beta (tagged "payments")."""
    started = [ShiftingTools().start(), ShiftingTools().start()]
    ServerFactory(path="/alpha", proxy_pass_url=started[0].url, tags=["payments"])
    ServerFactory(path="/beta", proxy_pass_url=started[1].url)
    yield started
    for server in started:
        server.stop()


@pytest.fixture
def callers(member, scope_factory, token_for):
    """Tokens of ana and bo (group "agents") and of cy (no group but the scope's), all granted everything."""
    scope_factory("all", group="agents", server_rules=EVERYTHING)
    scope_factory("all-cy", group="cy-only", server_rules=EVERYTHING)
    return {
        "ana": token_for(member("ana", "agents")),
        "bo": token_for(member("bo", "agents")),
        "cy": token_for(member("cy", "cy-only")),
    }


def calls(gateway, token, path="/alpha", times=1) -> list[str]:
    """`times` calls of echo in one SDK session: each answer's text, or the error's code and message."""

    async def work(client):
        answers = []
        for _ in range(times):
            try:
                answers.append((await client.call_tool("echo", {"text": "hi"})).content[0].text)
            except MCPError as refused:
                answers.append(f"{refused.error.code}: {refused.error.message}")
        return answers

    return run(gateway.url(f"{path}/mcp"), token, work)


def raw_call(gateway, token, path="/alpha", request_id=7):
    """One tools/call in a session of its own: (status, headers by lower-case name, the JSON answer)."""
    session = open_session(gateway.port, token, f"{path}/mcp")
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {}},
    }
    status, headers, raw = post(
        gateway.port, f"{path}/mcp", body, bearer(token, **{"Mcp-Session-Id": session})
    )
    return status, {name.lower(): value for name, value in headers.items()}, answer_of(headers, raw)


def answer_of(headers: dict, raw: bytes):
    streamed = "text/event-stream" in {k.lower(): v for k, v in headers.items()}.get("content-type", "")
    return sse_messages(raw)[0] if streamed else json.loads(raw)


def refusals() -> list[tuple[dict, int]]:
    """The exported counter of refused calls: (labels, count) of each series."""
    return [
        (point.labels, point.value) for point in aggregates.snapshot().series["mcp_gateway_refusals_total"]
    ]


def per_minute(limit: int) -> list[dict]:
    return [{"per": "minute", "limit": limit}]


def ana_on_alpha(limit: int):
    """A limit of ana's calls to /alpha: `limit` a minute."""
    return limit_set(
        actor=None,
        caller_kind="user",
        caller="ana",
        target_kind="server",
        target="/alpha",
        windows=per_minute(limit),
    )


def test_a_callers_limit_counts_exactly_to_the_window_edge_and_answers_429_with_its_headers(
    gateway, upstreams, callers, clock
):
    limit = ana_on_alpha(3)

    first = calls(gateway, callers["ana"], times=4)
    clock.now = MINUTE_START + 59.5
    status, headers, answer = raw_call(gateway, callers["ana"])
    clock.now = MINUTE_START + 60.0  # the next minute
    after = calls(gateway, callers["ana"], times=1)

    assert first[:3] == ["echo: text=hi"] * 3
    assert first[3] == "-32023: Rate limited: at most 3 calls per minute here; retry in 59.8 s."
    assert status == 429
    assert headers["retry-after"] == "1"
    assert headers["ratelimit-policy"] == f'"l{limit.pk}-minute";q=3;w=60'
    assert headers["ratelimit"] == f'"l{limit.pk}-minute";r=0;t=1'
    assert answer == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {
            "code": -32023,
            "message": "Rate limited: at most 3 calls per minute here; retry in 0.5 s.",
            "data": {"retryAfterMs": 500},
        },
    }
    assert after == ["echo: text=hi"]
    assert upstreams[0].calls == ["echo"] * 4
    assert refusals() == [({"service": "/alpha", "caller_kind": "user", "reason": "rate_limited"}, 2)]


def test_an_allowed_call_carries_the_ratelimit_headers_of_the_window_with_the_fewest_calls_left(
    gateway, upstreams, callers, clock
):
    limit = limit_set(
        actor=None,
        caller_kind="user",
        caller="ana",
        windows=[{"per": "minute", "limit": 10}, {"per": "hour", "limit": 3}],
    )

    answers = [raw_call(gateway, callers["ana"])[:2] for _ in range(2)]

    assert [status for status, _ in answers] == [200, 200]
    assert [headers["ratelimit"] for _, headers in answers] == [
        f'"l{limit.pk}-hour";r=2;t=3600',  # MINUTE_START is also an hour's first second
        f'"l{limit.pk}-hour";r=1;t=3600',
    ]
    assert answers[0][1]["ratelimit-policy"] == f'"l{limit.pk}-hour";q=3;w=3600'


def test_listing_and_session_upkeep_never_count(gateway, upstreams, callers, clock):
    limit_set(actor=None, caller_kind="user", caller="ana", windows=per_minute(1))

    async def work(client):
        for _ in range(5):
            await client.list_tools()
        return (await client.call_tool("echo", {"text": "x"})).content[0].text

    assert run(gateway.url("/alpha/mcp"), callers["ana"], work) == "echo: text=x"


def test_the_tightest_window_decides_first_and_a_denied_call_uses_up_no_window(
    gateway, upstreams, callers, clock
):
    limit_set(
        actor=None,
        caller_kind="user",
        caller="ana",
        windows=[{"per": "minute", "limit": 3}, {"per": "second", "limit": 2}],
    )

    first_second = calls(gateway, callers["ana"], times=5)
    clock.now = MINUTE_START + 1.25
    next_second = calls(gateway, callers["ana"], times=2)

    assert (
        first_second
        == ["echo: text=hi"] * 2
        + ["-32023: Rate limited: at most 2 calls per second here; retry in 0.8 s."] * 3
    )
    # the three denied calls used up nothing of the minute: one more call fits in it
    assert next_second == [
        "echo: text=hi",
        "-32023: Rate limited: at most 3 calls per minute here; retry in 58.8 s.",
    ]


def test_each_member_of_a_group_is_counted_on_their_own(gateway, upstreams, callers, clock):
    limit_set(actor=None, caller_kind="group", caller="agents", windows=per_minute(2))

    ana, bo, cy = (calls(gateway, callers[name], times=3) for name in ("ana", "bo", "cy"))

    assert (
        ana
        == bo
        == ["echo: text=hi"] * 2 + ["-32023: Rate limited: at most 2 calls per minute here; retry in 59.8 s."]
    )
    assert cy == ["echo: text=hi"] * 3  # not a member


def test_a_caller_target_limit_leaves_the_callers_other_targets_alone(gateway, upstreams, callers, clock):
    ana_on_alpha(1)

    alpha = calls(gateway, callers["ana"], "/alpha", times=2)
    beta = calls(gateway, callers["ana"], "/beta", times=3)

    assert alpha[1].startswith("-32023: ")
    assert beta == ["echo: text=hi"] * 3


def test_a_targets_own_limit_is_shared_by_every_caller_and_a_tag_names_its_servers(
    gateway, upstreams, callers, clock
):
    limit_set(actor=None, target_kind="tag", target="payments", windows=per_minute(3))

    answers = calls(gateway, callers["ana"], times=2) + calls(gateway, callers["bo"], times=2)
    untagged = calls(gateway, callers["bo"], "/beta", times=4)

    assert answers[:3] == ["echo: text=hi"] * 3
    assert answers[3].startswith("-32023: Rate limited: at most 3 calls per minute here")
    assert untagged == ["echo: text=hi"] * 4


def test_a_quarantine_stops_a_caller_mid_session_and_lifting_it_lets_it_through(
    gateway, upstreams, callers, admin_user
):
    async def work(client):
        before = (await client.call_tool("echo", {"text": "a"})).content[0].text
        quarantine = await _in_thread(
            quarantine_set, actor=admin_user, kind="user", name="ana", reason="runaway agent"
        )
        try:
            await client.call_tool("echo", {"text": "b"})
            during = "went through"
        except Exception as refused:  # noqa: BLE001 - the SDK reports the 403 as it can
            during = str(refused)
        await _in_thread(quarantine_lift, actor=admin_user, quarantine=quarantine)
        return before, during

    before, during = run(gateway.url("/alpha/mcp"), callers["ana"], work)
    status, _, answer = raw_call(gateway, callers["ana"])

    assert before == "echo: text=a"
    assert during != "went through"
    assert status == 200 and answer["result"]["content"][0]["text"] == "echo: "
    assert upstreams[0].calls == ["echo", "echo"]  # a, then the call after the lift: b never reached it
    assert list(
        AuditEvent.objects.filter(action__startswith="quarantine")
        .order_by("id")
        .values_list("action", "target")
    ) == [
        ("quarantine.set", "user:ana"),
        ("quarantine.lift", "user:ana"),
    ]


def test_a_quarantined_target_refuses_everyone_with_the_reason(gateway, upstreams, callers, admin_user):
    quarantine_set(actor=admin_user, kind="server", name="/alpha", reason="leaking data, under review")

    status, _, body = post(gateway.port, "/alpha/mcp", INITIALIZE, bearer(callers["cy"]))
    other, _, _ = raw_call(gateway, callers["cy"], "/beta")

    assert status == 403
    assert json.loads(body)["detail"] == "Quarantined by an operator: leaking data, under review"
    assert other == 200
    assert refusals() == [({"service": "/alpha", "caller_kind": "user", "reason": "quarantined"}, 1)]


@pytest.mark.parametrize(("fail_open", "expected"), [(True, 200), (False, 503)])
def test_with_redis_stopped_a_limit_fails_open_or_closed_as_it_says_and_counts_again_once_it_is_back(
    gateway, upstreams, callers, monkeypatch, tmp_path, fail_open, expected
):
    """The count goes to a Redis server of the test's own (with a password), killed and started again."""
    counter = RedisServer(tmp_path, password="s3cret").start()
    where = redis_url.parse(counter.url)
    monkeypatch.setattr(redis_clients, "pipe", lambda: redis_pipe.pipe(where))
    limit_set(actor=None, caller_kind="user", caller="ana", windows=per_minute(5), fail_open=fail_open)
    try:
        before, _, _ = raw_call(gateway, callers["ana"])
        counter.kill()
        stopped, headers, answer = raw_call(gateway, callers["ana"])
        counter.start()  # empty, the script unknown to it: counted from 1 again
        after, _, _ = raw_call(gateway, callers["ana"])
        counts = _counts(counter)
    finally:
        counter.kill()

    assert (before, stopped, after) == (200, expected, 200)
    assert counts == [b"1"]
    if not fail_open:
        assert headers["retry-after"] == "1"
        assert answer["error"]["code"] == -32603


def _counts(server: RedisServer) -> list[bytes]:
    client = redis.Redis.from_url(server.url)
    try:
        return [client.get(key) for key in client.keys("registry:limit:*")]
    finally:
        client.close()


def test_the_one_rule_refuses_what_a_limit_or_quarantine_cannot_say(admin_user, db):
    cases = [
        dict(windows=per_minute(1)),
        dict(caller_kind="user", caller="nobody", windows=per_minute(1)),
        dict(caller_kind="user", caller="admin", windows=[{"per": "week", "limit": 1}]),
        dict(target_kind="server", target="/missing", windows=per_minute(0)),
    ]
    shape = 'A list of 1 to 4 windows, each {"per": second|minute|hour|day, "limit": 1 to 1000000000}.'
    problems = []
    for case in cases:
        with pytest.raises(LimitRefused) as refused:
            limit_set(actor=admin_user, **case)
        problems.append(refused.value.problems)
    with pytest.raises(LimitRefused) as self_quarantine:
        quarantine_set(actor=admin_user, kind="user", name=admin_user.username, reason="oops")

    assert problems == [
        {"caller_kind": "A limit names a caller, a target, or both."},
        {"caller": "No user or service account is named nobody."},
        {"windows": shape},
        {
            "target": "No server is registered at /missing.",
            "windows": shape,
        },
    ]
    assert self_quarantine.value.problems == {
        "name": "You cannot quarantine yourself: another administrator may."
    }


async def _in_thread(function, **kwargs):
    from asgiref.sync import sync_to_async

    return await sync_to_async(function, thread_sensitive=False)(**kwargs)


def test_behind_a_virtual_server_its_own_limits_and_its_members_count_together(
    gateway, upstreams, callers, clock
):
    virtual_server_create(
        actor=None, path="/bundle", definition={"name": "Bundle", "members": [{"server": "/alpha"}]}
    )
    limit_set(actor=None, target_kind="server", target="/alpha", windows=per_minute(4))
    limit_set(
        actor=None,
        caller_kind="user",
        caller="bo",
        target_kind="virtual_server",
        target="/bundle",
        windows=per_minute(1),
    )

    ana = calls(gateway, callers["ana"], "/bundle", times=2)
    bo = calls(gateway, callers["bo"], "/bundle", times=2)
    ana_again = calls(gateway, callers["ana"], "/bundle", times=2)

    assert ana == ["echo: text=hi"] * 2
    assert bo == ["echo: text=hi", "-32023: Rate limited: at most 1 calls per minute here; retry in 59.8 s."]
    # bo's refused call used up nothing of /alpha's window: exactly one call was left in it
    assert ana_again == [
        "echo: text=hi",
        "-32023: Rate limited: at most 4 calls per minute here; retry in 59.8 s.",
    ]
    assert upstreams[0].calls == ["echo"] * 4


def test_the_metrics_page_plots_each_targets_refused_calls_by_reason(
    gateway, upstreams, callers, clock, admin_user, client
):
    ana_on_alpha(1)
    answered = calls(gateway, callers["ana"], times=3)
    quarantine_set(actor=admin_user, kind="server", name="/beta", reason="under review")
    quarantined, _, _ = post(gateway.port, "/beta/mcp", INITIALIZE, bearer(callers["cy"]))
    client.force_login(admin_user)

    page = client.get("/admin/metrics/plots/?hours=1").content.decode()

    assert answered[1:] == ["-32023: Rate limited: at most 1 calls per minute here; retry in 59.8 s."] * 2
    assert quarantined == 403
    assert re.findall(
        r'<tr data-refused="([^"]+)"><td><code>[^<]+</code></td><td class="num">(\d+)</td>'
        r'<td class="num">(\d+)</td><td class="num">(\d+)</td>',
        page,
    ) == [("/alpha", "2", "0", "0"), ("/beta", "0", "1", "0")]
    assert 'aria-label="Calls to /alpha refused by limits and quarantine"' in page
    assert 'aria-label="Calls to /beta refused by limits and quarantine"' in page
