"""MCP tasks through the gateway, bound to their caller, against a server of the 2026-07-28 revision with
the tasks extension (tests/task_server.py, written to SEP-2663) over real HTTP: the task a call creates is
named by the gateway; polled to completion; its elicitation answered by `tasks/update`; cancelled at the
server; "not found" for any other caller, on another web process too; judged as a call of its tool every
time; and its polls count against no call limit."""

import json

import pytest

from accounts.models import Scope
from accounts.services import scope_update
from limits.services import limit_set
from tests.factories import ServerFactory
from tests.gateway.gateway_calls import gateway_fixture, post, sse_messages  # noqa: F401
from tests.processes import ProcessGroup, free_ports, wait_healthy
from tests.task_server import task_server
from virtual_servers.services import virtual_server_create

pytestmark = pytest.mark.django_db(transaction=True)

MODERN = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
META = {
    "io.modelcontextprotocol/clientInfo": {"name": "tasks-test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
}
NOT_FOUND = {"code": -32602, "message": "Failed to retrieve task: Task not found"}


@pytest.fixture(params=[False], ids=["json"])
def jobs(request):
    running, server = task_server(polls=2, sse=request.param)
    ServerFactory(path="/jobs", proxy_pass_url=running.url("/mcp"))
    yield server
    running.stop()


@pytest.fixture
def callers(member, scope_factory, token_for):
    everything = [{"server": path, "methods": ["*"], "tools": ["*"]} for path in ("/jobs", "/desk")]
    scope_factory("jobs", group="jobs", server_rules=everything)
    scope_factory(
        "reports",
        group="reports",
        server_rules=[{"server": "/jobs", "methods": ["*"], "tools": ["long_report"]}],
    )
    return {
        name: token_for(member(name, group))
        for name, group in (("ada", "jobs"), ("bo", "jobs"), ("cy", "reports"))
    }


def send(
    port: int, token: str, method: str, params: dict, name: str | None = None, request_id=1, path="/jobs"
):
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": META}}
    headers = {"Authorization": f"Bearer {token}", "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    status, _, body = post(port, f"{path}/mcp", message, headers)
    return status, json.loads(body) if body.lstrip().startswith(b"{") else sse_messages(body)[0]


def created(port: int, token: str, tool: str = "long_report", path: str = "/jobs") -> str:
    status, answer = send(port, token, "tools/call", {"name": tool, "arguments": {}}, tool, path=path)
    assert status == 200 and answer.get("result", {}).get("resultType") == "task", answer
    return answer["result"]["taskId"]


@pytest.mark.parametrize("jobs", [False, True], ids=["json", "sse"], indirect=True)
def test_a_call_creates_a_task_named_by_the_gateway_and_polled_to_completion(gateway, jobs, callers):
    task = created(gateway.port, callers["ada"])
    polls = [
        send(gateway.port, callers["ada"], "tasks/get", {"taskId": task}, task)[1]["result"] for _ in range(3)
    ]

    (upstream,) = jobs.tasks
    assert task.startswith("registry-task.") and upstream not in task
    assert [poll["status"] for poll in polls] == ["working", "working", "completed"]
    assert {poll["taskId"] for poll in polls} == {task}
    assert polls[-1]["result"] == {"content": [{"type": "text", "text": "The report."}], "isError": False}
    gets = [(task_id, name) for method, task_id, name, _ in jobs.seen if method == "tasks/get"]
    assert gets == [(upstream, upstream)] * 3  # the body and the Mcp-Name header name the server's own id


def test_an_elicitation_is_answered_by_tasks_update_and_a_cancel_reaches_the_server(gateway, jobs, callers):
    greeting = created(gateway.port, callers["ada"], "hello_world")
    asked = send(gateway.port, callers["ada"], "tasks/get", {"taskId": greeting}, greeting)[1]["result"]
    answer = {"name": {"action": "accept", "content": {"name": "Luca"}}}
    updated = send(
        gateway.port, callers["ada"], "tasks/update", {"taskId": greeting, "inputResponses": answer}, greeting
    )
    done = send(gateway.port, callers["ada"], "tasks/get", {"taskId": greeting}, greeting)[1]["result"]
    report = created(gateway.port, callers["ada"])
    cancelled = send(gateway.port, callers["ada"], "tasks/cancel", {"taskId": report}, report)
    after = send(gateway.port, callers["ada"], "tasks/get", {"taskId": report}, report)[1]["result"]

    assert (asked["status"], sorted(asked["inputRequests"])) == ("input_required", ["name"])
    assert updated == (200, {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete"}})
    assert (done["status"], done["result"]["content"][0]["text"]) == ("completed", "Hello, Luca!")
    assert cancelled[1]["result"] == {"resultType": "complete"}
    assert jobs.cancelled == [
        task_id for task_id, kept in jobs.tasks.items() if kept["tool"] == "long_report"
    ]
    assert after["status"] == "cancelled"


def test_another_caller_gets_task_not_found_on_any_web_process_and_nothing_reaches_the_server(
    jobs, callers, tmp_path
):
    ports = free_ports(2)
    group = ProcessGroup(tmp_path)
    try:
        for n, port in enumerate(ports):
            wait_healthy(port, group.web(f"web{n}", port, "registry_site.asgi:application"))
        task = created(ports[0], callers["ada"])
        own_elsewhere = send(ports[1], callers["ada"], "tasks/get", {"taskId": task}, task)
        seen_before = len(jobs.seen)
        answers = [
            send(port, callers["bo"], method, {"taskId": task}, task)
            for port in ports
            for method in ("tasks/get", "tasks/cancel")
        ]
        forged = send(
            ports[1], callers["ada"], "tasks/get", {"taskId": task[:-4] + "AAAA"}, task[:-4] + "AAAA"
        )
        upstream_id = next(iter(jobs.tasks))
        raw = send(ports[1], callers["ada"], "tasks/get", {"taskId": upstream_id}, upstream_id)
    finally:
        group.stop()

    assert own_elsewhere[1]["result"]["taskId"] == task
    assert [answer for _, answer in answers] == [{"jsonrpc": "2.0", "id": 1, "error": NOT_FOUND}] * 4
    assert forged[1]["error"] == raw[1]["error"] == NOT_FOUND
    assert len(jobs.seen) == seen_before  # no refused request reached the server
    assert jobs.cancelled == []


def test_every_task_request_is_judged_as_a_call_of_its_tool(gateway, jobs, callers):
    task = created(gateway.port, callers["cy"])  # cy may call long_report only
    polled = send(gateway.port, callers["cy"], "tasks/get", {"taskId": task}, task)
    narrowed = [{"server": "/jobs", "methods": ["*"], "tools": ["hello_world"]}]
    scope_update(actor=None, scope=Scope.objects.get(name="reports"), server_rules=narrowed)
    refused = send(gateway.port, callers["cy"], "tasks/get", {"taskId": task}, task)

    assert polled[1]["result"]["status"] == "working"
    assert refused[1]["error"] == {
        "code": -32001,
        "message": "Access denied: 'cy' may not call tool 'long_report' on server '/jobs'.",
    }


def test_polling_a_task_counts_against_no_call_limit(gateway, jobs, callers):
    limit_set(
        actor=None,
        caller_kind="user",
        caller="ada",
        target_kind="server",
        target="/jobs",
        windows=[{"per": "hour", "limit": 1}],
    )
    task = created(gateway.port, callers["ada"])
    polls = [send(gateway.port, callers["ada"], "tasks/get", {"taskId": task}, task)[1] for _ in range(3)]
    again = send(
        gateway.port, callers["ada"], "tools/call", {"name": "long_report", "arguments": {}}, "long_report"
    )

    assert [poll["result"]["status"] for poll in polls] == ["working", "working", "completed"]
    assert (again[0], again[1]["error"]["code"]) == (
        429,
        -32023,
    )  # the one call the limit allowed was the task's
    assert again[1]["error"]["message"].startswith("Rate limited: at most 1 calls per hour here")


def test_a_virtual_servers_member_task_is_the_callers_there_and_nowhere_else(gateway, jobs, callers):
    virtual_server_create(
        actor=None,
        path="/desk",
        definition={
            "name": "Desk",
            "members": [{"server": "/jobs", "tool_settings": {"long_report": {"alias": "report"}}}],
        },
    )
    task = created(gateway.port, callers["ada"], "report", path="/desk")
    polls = [
        send(gateway.port, callers["ada"], "tasks/get", {"taskId": task}, task, path="/desk")[1]["result"]
        for _ in range(3)
    ]
    at_the_member = send(gateway.port, callers["ada"], "tasks/get", {"taskId": task}, task)
    of_another = send(gateway.port, callers["bo"], "tasks/get", {"taskId": task}, task, path="/desk")

    (upstream,) = jobs.tasks
    assert task.startswith("registry-task.") and upstream not in task
    assert [poll["status"] for poll in polls] == ["working", "working", "completed"]
    assert {poll["taskId"] for poll in polls} == {task}
    gets = [(task_id, name) for method, task_id, name, _ in jobs.seen if method == "tasks/get"]
    assert gets == [(upstream, upstream)] * 3  # the member is told the task in its Mcp-Name too
    assert at_the_member[1]["error"] == of_another[1]["error"] == NOT_FOUND


def listened(port: int, token: str, task_ids) -> list[dict]:
    """The messages of a `subscriptions/listen` stream asking for `task_ids`' notifications."""
    params = {"notifications": {"taskIds": task_ids}, "_meta": META}
    message = {"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": params}
    headers = {
        "Authorization": f"Bearer {token}",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "subscriptions/listen",
    }
    status, _, body = post(port, "/jobs/mcp", message, headers)
    assert status == 200, body
    return sse_messages(body)


def test_task_notifications_are_heard_of_the_callers_own_tasks_only_by_the_gateways_ids(
    gateway, jobs, callers
):
    mine = created(gateway.port, callers["ada"])
    (upstream,) = jobs.tasks
    theirs = created(gateway.port, callers["cy"])  # cy may call long_report only: then not even that
    heard = listened(gateway.port, callers["ada"], [mine, upstream, "registry-task.forged"])
    foreign = listened(gateway.port, callers["bo"], [mine, upstream])
    narrowed = [{"server": "/jobs", "methods": ["*"], "tools": ["hello_world"]}]
    scope_update(actor=None, scope=Scope.objects.get(name="reports"), server_rules=narrowed)
    withdrawn = listened(gateway.port, callers["cy"], [theirs])
    unlisted = listened(gateway.port, callers["bo"], upstream)  # not a list: nothing of it goes on

    assert jobs.listened == [[upstream], [], [], []]  # no id reaches the server but the caller's own, judged
    assert heard[0] == {
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": {"notifications": {"taskIds": [mine]}},
    }
    assert (heard[1]["method"], heard[1]["params"]["taskId"]) == ("notifications/tasks", mine)
    assert heard[1]["params"]["status"] == "working"
    assert foreign[0]["params"] == {"notifications": {"taskIds": []}}
    assert withdrawn[0]["params"] == {"notifications": {"taskIds": []}}
    assert unlisted[0]["params"] == {"notifications": {"taskIds": []}}
