"""GET /validate, the reverse proxy's check: identity headers out, 200/401/403/400 in."""

import json

import pytest

from accounts.models import IssuedToken
from accounts.tokens import encode
from limits.models import Limit
from limits.services import limit_set, quarantine_set
from tests.factories import ServerFactory

pytestmark = pytest.mark.django_db

CALL_NOW = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "now"}})


def token(user, scopes=("time-exec",)):
    encoded = encode(
        username=user.username,
        scopes=scopes,
        groups=["timers"],
        admin=False,
        lifetime=__import__("datetime").timedelta(hours=1),
        kind="user",
    )
    IssuedToken.objects.create(jti=encoded.jti, user=user, kind="user", expires_at=encoded.expires_at)
    return encoded.token


def validate(
    client, *, auth=None, url="https://gw.example.test/currenttime/mcp", body=None, method="get", **headers
):
    if auth:
        headers["Authorization"] = f"Bearer {auth}"
    if url is not None:
        headers["X-Original-URL"] = url
    if body is not None:
        headers["X-Body"] = body
    return client.generic(method.upper(), "/validate", headers=headers)


def test_an_allowed_tool_call_answers_200_with_identity_headers(client, timer):
    response = validate(client, auth=token(timer), body=CALL_NOW)

    assert response.status_code == 200
    assert response.json() == {
        "valid": True,
        "username": "tim",
        "scopes": ["time-exec"],
        "method": "tools/call",
        "server_name": "currenttime",
        "tool_name": "now",
    }
    assert response["X-User"] == "tim"
    assert response["X-Username"] == "tim"
    assert response["X-Scopes"] == "time-exec"
    assert response["X-Auth-Method"] == "jwt"
    assert response["X-Server-Name"] == "currenttime"
    assert response["X-Tool-Name"] == "now"
    assert response["X-Client-Id"] == ""


@pytest.mark.parametrize("original_method", ["GET", "DELETE"])
def test_a_get_or_delete_without_a_body_is_judged_as_the_session(client, timer, original_method):
    response = validate(client, auth=token(timer), **{"X-Original-Method": original_method})

    assert response.status_code == 200
    assert response.json()["method"] == "initialize"
    assert response.json()["tool_name"] is None


@pytest.mark.parametrize("original_method", ["POST", None])
def test_a_call_whose_body_did_not_arrive_is_refused_not_guessed(client, timer, original_method):
    headers = {"X-Original-Method": original_method} if original_method else {}

    response = validate(client, auth=token(timer), **headers)

    assert response.status_code == 400
    assert response.json()["detail"].startswith("No JSON-RPC body arrived")


def test_x_authorization_and_the_session_cookie_are_accepted(client, timer):
    via_header = client.get(
        "/validate",
        headers={
            "X-Authorization": f"Bearer {token(timer)}",
            "X-Original-URL": "/currenttime/mcp",
            "X-Original-Method": "GET",
        },
    )
    client.force_login(timer)
    via_session = validate(client, method="post", **{"X-Original-Method": "GET"})

    assert via_header.status_code == 200
    assert via_session.status_code == 200
    assert via_session["X-Auth-Method"] == "session"


def test_missing_or_bad_credentials_are_401(client, timer):
    missing = validate(client)
    bad = validate(client, auth="garbage")

    assert missing.status_code == 401
    assert missing.json()["error_code"] == "not_authenticated"
    assert missing["WWW-Authenticate"].startswith("Bearer")
    assert bad.status_code == 401
    assert bad.json()["error_code"] == "token_malformed"


def test_spoofed_identity_headers_gain_nothing(client, timer):
    response = validate(
        client, **{"X-User": "admin", "X-Scopes": "mcp-registry-admin", "X-Username": "admin"}
    )

    assert response.status_code == 401


@pytest.mark.parametrize(
    ("url", "body", "message"),
    [
        (
            "/currenttime/mcp",
            json.dumps({"method": "tools/call", "params": {"name": "shutdown"}}),
            "Access denied: 'tim' may not call tool 'shutdown' on server '/currenttime'.",
        ),
        ("/weather/mcp", None, "Access denied: 'tim' may not call 'initialize' on server '/weather'."),
        (
            "/currenttime/mcp",
            json.dumps({"method": "resources/list"}),
            "Access denied: 'tim' may not call 'resources/list' on server '/currenttime'.",
        ),
    ],
)
def test_calls_outside_the_scopes_are_403_naming_server_and_method(client, timer, url, body, message):
    response = validate(client, auth=token(timer), url=url, body=body, **{"X-Original-Method": "GET"})

    assert response.status_code == 403
    assert response.json()["detail"] == message
    assert "X-User" not in response


def test_a_disabled_server_is_refused(client, timer):
    from servers.models import Server

    Server.objects.filter(path="/currenttime").update(is_enabled=False)

    response = validate(client, auth=token(timer), **{"X-Original-Method": "GET"})

    assert response.status_code == 403
    assert response.json()["detail"] == "Server 'currenttime' is unknown or disabled."


@pytest.mark.parametrize(
    ("url", "body"),
    [
        ("/currenttime/mcp", "{not json"),
        ("/currenttime/mcp", "[]"),
        ("/currenttime/mcp", '"just a string"'),
        ("/currenttime/mcp", json.dumps({"params": {}})),
        ("/currenttime/mcp", json.dumps({"method": "tools/call", "params": {}})),
        ("/currenttime/mcp", json.dumps({"method": "tools/call", "params": "now"})),
        (None, None),
        ("https://gw.example.test/", None),
        ("https://gw.example.test/currenttime", None),
        ("/alpha/../currenttime/mcp", None),
        ("/alpha/%2e%2e/currenttime/mcp", None),
        ("/alpha//currenttime/mcp", None),
    ],
)
def test_malformed_input_is_400_not_500(client, timer, url, body):
    response = validate(client, auth=token(timer), url=url, body=body)

    assert response.status_code == 400
    assert response.json()["error_code"] == "bad_request"


def test_a_batch_is_allowed_only_if_every_call_is(client, timer):
    ok = json.dumps([{"method": "initialize"}, {"method": "tools/list"}])
    mixed = json.dumps([{"method": "initialize"}, {"method": "tools/call", "params": {"name": "shutdown"}}])

    assert validate(client, auth=token(timer), body=ok).status_code == 200
    assert validate(client, auth=token(timer), body=mixed).status_code == 403


@pytest.mark.parametrize("content_type", ["application/json", "text/plain"])
def test_the_body_may_come_as_the_request_body_whatever_its_content_type(client, timer, content_type):
    response = client.post(
        "/validate",
        data=CALL_NOW,
        content_type=content_type,
        headers={"Authorization": f"Bearer {token(timer)}", "X-Original-URL": "/currenttime/mcp"},
    )

    assert response.status_code == 200
    assert response.json()["tool_name"] == "now"


def test_the_server_is_the_longest_registered_prefix(client, timer, scope_factory):

    ServerFactory(path="/team")
    ServerFactory(path="/team/weather")
    scope_factory(
        "team-weather",
        group="timers",
        server_rules=[{"server": "/team/weather", "methods": ["*"], "tools": ["*"]}],
    )

    both = token(timer, scopes=("time-exec", "team-weather"))
    listing = json.dumps({"method": "tools/list"})

    nested = validate(client, auth=both, url="/team/weather/mcp", body=listing)
    parent = validate(client, auth=both, url="/team/mcp", body=listing)

    assert nested.status_code == 200
    assert nested.json()["server_name"] == "team/weather"
    assert parent.status_code == 403


@pytest.mark.parametrize(
    "message, allowed",
    [
        ({"jsonrpc": "2.0", "method": "notifications/initialized"}, True),
        ({"jsonrpc": "2.0", "id": 1, "method": "ping"}, True),
        ({"jsonrpc": "2.0", "id": 1, "method": "server/discover"}, True),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, False),
        ({"jsonrpc": "2.0", "id": 1, "method": "Initialize"}, False),
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, True),
    ],
)
def test_validate_and_the_gateway_judge_every_message_alike(
    client, member, scope_factory, token_for, message, allowed
):
    from accounts.principal import principal_for_user
    from gateway import messages

    scope_factory(
        "init-only", group="openers", server_rules=[{"server": "/currenttime", "methods": ["initialize"]}]
    )
    ServerFactory(path="/currenttime")
    user = member("ian", "openers")

    response = validate(client, auth=token_for(user), body=json.dumps(message))
    checked = messages.check_body(message, principal_for_user(user, auth_method="session"), "/currenttime")

    assert response.status_code == (200 if allowed else 403)
    assert (len(checked.forward) == 1) is allowed


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("kind", "name"), [("user", "tim"), ("group", "timers"), ("server", "/currenttime")])
def test_a_quarantined_caller_or_server_is_refused_with_the_reason(client, timer, kind, name):
    quarantine_set(actor=None, kind=kind, name=name, reason="leaking data")

    response = validate(client, auth=token(timer), body=CALL_NOW)

    assert (response.status_code, response.json()["error_code"]) == (403, "permission_denied")
    assert response.json()["detail"] == "Quarantined by an operator: leaking data"
    assert "X-User" not in response


@pytest.mark.django_db(transaction=True)
def test_calls_over_a_limit_are_refused_with_429_and_counted_once(client, timer):
    limit_set(
        actor=None,
        caller_kind="user",
        caller="tim",
        target_kind="server",
        target="/currenttime",
        windows=[{"per": "minute", "limit": 2}],
    )
    listing = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    auth = token(timer)

    answers = [validate(client, auth=auth, body=CALL_NOW) for _ in range(3)]
    listed = validate(client, auth=auth, body=listing)

    assert [answer.status_code for answer in answers] == [200, 200, 429]
    assert answers[0]["RateLimit"].startswith(f'"l{Limit.objects.get().pk}-minute";r=1;t=')
    refused = answers[2]
    assert refused.json()["error_code"] == "throttled"
    assert refused.json()["detail"].startswith("Rate limited: at most 2 calls per minute here; retry in ")
    assert int(refused["Retry-After"]) >= 1
    assert listed.status_code == 200  # listing never counts


def test_a_task_request_is_refused_as_carried_only_by_the_gateway_itself(client, timer):
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": "registry-task.abc"}}
    )

    response = validate(client, auth=token(timer), body=body)

    assert response.status_code == 501
    assert response.json()["error_code"] == "not_implemented"
    assert response.json()["detail"].startswith("Task requests (tasks/get, tasks/update, tasks/cancel)")
