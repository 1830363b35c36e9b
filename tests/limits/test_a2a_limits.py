"""Limits and quarantine of A2A agents through the gateway, by the same decision as MCP's (a real agent
of the official a2a-sdk, tests/a2a_agents.py): messages count and task reads do not; an over-limit
message is answered in its binding's error shape with 429 and the same headers; a quarantined agent is
refused to everyone."""

import json

import httpx
import pytest

from limits import counting
from limits.services import limit_set, quarantine_set
from tests.agents import test_a2a_gateway as a2a
from tests.gateway.gateway_calls import bearer, caller_fixture, gateway_fixture, post  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

agent = a2a.agent  # the echo agent of the official SDK at /echo
V1 = a2a.V1

EVERYTHING = {"server": "/echo", "methods": ["*"]}
MINUTE_START = 1_800_000_000.0


def message(request_id: int, text: str) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "SendMessage",
        "params": {
            "message": {"messageId": f"m-{request_id}", "role": "ROLE_USER", "parts": [{"text": text}]}
        },
    }


def test_messages_count_task_reads_do_not_and_the_refusal_is_in_each_bindings_shape(
    gateway, agent, caller, monkeypatch
):
    monkeypatch.setattr(counting, "now", lambda: MINUTE_START + 30)
    token = caller(EVERYTHING, name="ana")
    limit = limit_set(
        actor=None,
        caller_kind="user",
        caller="ana",
        target_kind="agent",
        target="/echo",
        windows=[{"per": "minute", "limit": 1}],
    )

    first = post(gateway.port, "/echo/a2a", message(1, "hi"), {**bearer(token), **V1})
    task_id = json.loads(first[2])["result"]["task"]["id"]
    read = post(
        gateway.port,
        "/echo/a2a",
        {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}},
        {**bearer(token), **V1},
    )
    second = post(gateway.port, "/echo/a2a", message(3, "again"), {**bearer(token), **V1})
    rest = httpx.post(
        gateway.url("/echo/a2a/message:send"),
        json=message(4, "rest")["params"],
        headers={**bearer(token), **V1},
    )

    assert first[0] == 200 and read[0] == 200
    assert first[1]["ratelimit"] == f'"l{limit.pk}-minute";r=0;t=30'
    assert "ratelimit" not in read[1]
    assert second[0] == 429
    assert second[1]["retry-after"] == "30"
    assert second[1]["ratelimit-policy"] == f'"l{limit.pk}-minute";q=1;w=60'
    assert json.loads(second[2])["error"] == {
        "code": -32023,
        "message": "Rate limited: at most 1 calls per minute here; retry in 30.0 s.",
        "data": {"retryAfterMs": 30000},
    }
    assert (rest.status_code, rest.json()) == (
        429,
        {
            "error": {
                "code": 429,
                "status": "RESOURCE_EXHAUSTED",
                "message": "Rate limited: at most 1 calls per minute here; retry in 30.0 s.",
                "details": [{"retryAfterMs": 30000}],
            }
        },
    )


def test_a_quarantined_agent_refuses_everyone_even_its_card(gateway, agent, caller, admin_user):
    token = caller(EVERYTHING, name="ana")
    quarantine_set(actor=admin_user, kind="agent", name="/echo", reason="answers with customer data")

    sent = post(gateway.port, "/echo/a2a", message(1, "hi"), {**bearer(token), **V1})
    card = httpx.get(gateway.url("/echo/a2a/.well-known/agent-card.json"), headers=bearer(token))

    assert (sent[0], json.loads(sent[2])["detail"]) == (
        403,
        "Quarantined by an operator: answers with customer data",
    )
    assert card.status_code == 403
