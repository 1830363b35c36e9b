"""Who may publish which names, and what the registry refuses to store."""

import json

import pytest

from accounts.models import AuditEvent
from catalog.models import ServerVersion

pytestmark = pytest.mark.django_db


DEEP = json.loads("[" * 40 + "]" * 40)


def _doc(name="com.acme/weather", version="1.0.0", **fields):
    return {"name": name, "description": "Weather for any city", "version": version} | fields


def publish(client, token, body, *, raw=False):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    data = body if raw else json.dumps(body)
    return client.post("/v0.1/publish", data, content_type="application/json", headers=headers)


@pytest.fixture
def acme_token(member, scope_factory, token_for):
    scope_factory("acme-publishers", group="acme", publish_names=["com.acme/*", "io.github.acme/weather"])
    return token_for(member("pat", "acme"))


@pytest.fixture
def admin_token(member, token_for):
    return token_for(member("ada", "mcp-registry-admin"))


@pytest.mark.parametrize(
    ("name", "status"),
    [
        ("com.acme/weather", 200),
        ("com.acme/maps", 200),
        ("io.github.acme/weather", 200),
        ("io.github.acme/maps", 403),
        ("com.acmecorp/weather", 403),
        ("com.other/weather", 403),
    ],
)
def test_a_scope_publishes_the_names_its_patterns_match(client, acme_token, name, status):
    answer = publish(client, acme_token, _doc(name=name))

    assert answer.status_code == status, answer.content
    if status == 403:
        assert answer.json() == {
            "error": {
                "code": "FORBIDDEN",
                "message": f"You may not publish or change {name}: no scope of yours names it.",
            }
        }


def test_the_status_of_a_name_is_changed_by_those_who_may_publish_it(client, acme_token, admin_token):
    publish(client, admin_token, _doc(name="com.other/weather"))
    publish(client, admin_token, _doc(name="com.acme/weather"))
    headers = {"Authorization": f"Bearer {acme_token}"}

    mine = client.patch(
        "/v0.1/servers/com.acme%2Fweather/status",
        {"status": "deprecated"},
        "application/json",
        headers=headers,
    )
    theirs = client.patch(
        "/v0.1/servers/com.other%2Fweather/versions/1.0.0/status",
        {"status": "deprecated"},
        "application/json",
        headers=headers,
    )

    assert (mine.status_code, theirs.status_code) == (200, 403)
    assert mine.json()["updatedCount"] == 1
    assert list(ServerVersion.objects.order_by("name").values_list("status", flat=True)) == [
        "deprecated",
        "active",
    ]


def test_every_write_to_a_name_is_refused_by_the_same_rule_in_the_same_words(client, acme_token, admin_token):
    publish(client, admin_token, _doc(name="com.other/weather"))
    headers = {"Authorization": f"Bearer {acme_token}"}
    status = {"status": "deprecated"}

    answers = [
        publish(client, acme_token, _doc(name="com.other/weather", version="2.0.0")),
        client.patch("/v0.1/servers/com.other%2Fweather/status", status, "application/json", headers=headers),
        client.patch(
            "/v0.1/servers/com.other%2Fweather/versions/1.0.0/status",
            status,
            "application/json",
            headers=headers,
        ),
        client.put(
            "/v0.1/servers/com.other%2Fweather/versions/1.0.0", {}, "application/json", headers=headers
        ),
        client.delete("/v0.1/servers/com.other%2Fweather/versions/1.0.0", headers=headers),
    ]

    message = "You may not publish or change com.other/weather: no scope of yours names it."
    assert [(answer.status_code, answer.json()["error"]["message"]) for answer in answers] == [
        (403, message)
    ] * 5
    assert ServerVersion.objects.get().status == "active"


def test_the_gateways_names_are_not_published_even_by_an_administrator(client, admin_token):
    answer = publish(client, admin_token, _doc(name="io.mcpgateway/weather"))

    assert answer.status_code == 403
    assert answer.json()["error"]["message"].startswith("Names under io.mcpgateway/ are the servers of this")


def test_publishing_needs_a_token_even_when_the_listing_is_public(client, settings):
    settings.PUBLIC_LISTING = True

    anonymous = publish(client, None, _doc())

    assert anonymous.status_code == 401
    assert client.get("/v0.1/servers").status_code == 200


def test_a_publish_is_audited(client, admin_token):
    publish(client, admin_token, _doc(version="2.1.0"))

    event = AuditEvent.objects.get(action="version.publish")
    assert (event.actor_name, event.target, event.detail) == (
        "ada",
        "server:com.acme/weather",
        {"version": "2.1.0"},
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "The body must be a server.json object."),
        ("not json", "JSON parse error: "),
        (_doc(description="nul \u0000 here"), "description: NUL characters are not allowed."),
        (_doc(version="latest"), "version must be a specific version, such as 1.0.2 (not latest)."),
        (_doc(name="no-slash"), "Not a valid server.json: name: "),
        (_doc(description="x" * 101), "Not a valid server.json: description: "),
        (_doc(_meta={"io.modelcontextprotocol.registry/official": {"status": "active"}}), "_meta.io.model"),
        (
            _doc(_meta={"io.mcpgateway/mirror": {"upstream": "forged"}}),
            "_meta.io.mcpgateway/mirror is written",
        ),
        (_doc(_meta={"com.acme": {"x": DEEP}}), "JSON is nested deeper than 32 levels."),
        (_doc(_meta={"com.acme": {"blob": "x" * 300_000}}), "The document is larger than 256 KiB."),
    ],
)
def test_hostile_or_invalid_documents_are_400_with_the_reason(client, admin_token, body, message):
    answer = publish(client, admin_token, body, raw=isinstance(body, str))

    assert answer.status_code == 400, answer.content
    assert message in answer.json()["error"]["message"]
    assert ServerVersion.objects.count() == 0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"status": "retired"}, "status must be one of active, deprecated, deleted."),
        ({"status": "deprecated", "statusMessage": "m" * 501}, "statusMessage must be text of at most 500"),
        ({"status": "deprecated", "reason": "x"}, "Unknown field 'reason'"),
        (["deprecated"], "The body must be an object: {status, statusMessage}."),
    ],
)
def test_bad_status_requests_are_400(client, admin_token, body, message):
    publish(client, admin_token, _doc())

    answer = client.patch(
        "/v0.1/servers/com.acme%2Fweather/versions/1.0.0/status",
        json.dumps(body),
        "application/json",
        headers={"Authorization": f"Bearer {admin_token}"},
    )

    assert answer.status_code == 400
    assert answer.json()["error"]["message"].startswith(message)


def test_status_of_unknown_servers_and_versions_is_404(client, admin_token):
    publish(client, admin_token, _doc())
    headers = {"Authorization": f"Bearer {admin_token}"}
    body = {"status": "deprecated"}

    unknown_server = client.patch(
        "/v0.1/servers/com.acme%2Fnone/status", body, "application/json", headers=headers
    )
    unknown_version = client.patch(
        "/v0.1/servers/com.acme%2Fweather/versions/9.9.9/status", body, "application/json", headers=headers
    )

    assert (unknown_server.status_code, unknown_server.json()["error"]["message"]) == (
        404,
        "Server not found",
    )
    assert (unknown_version.status_code, unknown_version.json()["error"]["message"]) == (
        404,
        "Server version not found",
    )
