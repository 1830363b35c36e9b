"""An administrator puts a published server with a remote behind the gateway in one action: from then on
it is a gateway server (health checks, tools, rules) and /v0.1 advertises the gateway's URL."""

import json

import pytest
from django.urls import reverse

from accounts.choices import AuthMethod
from accounts.principal import principal_for_user
from catalog.models import GatewayBinding, ServerVersion
from catalog.services import CatalogRefused
from catalog.services.gateway import gateway_path_for, version_put_behind_gateway
from servers.health import check_and_record
from servers.models import Server
from tests.mcp_servers import time_server_fixture  # noqa: F401 - registers the fixture
from tests.servers.spec import validate_server_list

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(member):
    return member("ada", "mcp-registry-admin")


def publish(client, token, document):
    answer = client.post(
        "/v0.1/publish",
        json.dumps(document),
        "application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert answer.status_code == 200, answer.content
    return answer


def test_a_remote_put_behind_the_gateway_is_proxied_checked_and_advertised(
    client, admin, token_for, time_server
):
    token = token_for(admin)
    remote = {"type": "streamable-http", "url": time_server}
    publish(
        client,
        token,
        {"name": "com.acme/clock", "description": "Tells the time", "version": "1.0.0"}
        | {"remotes": [remote]},
    )

    server = version_put_behind_gateway(
        actor=principal_for_user(admin, auth_method=AuthMethod.SESSION), name="com.acme/clock"
    )
    check_and_record(server.pk)

    server.refresh_from_db()
    assert (server.path, server.proxy_pass_url, server.is_enabled, server.health_status) == (
        "/com-acme/clock",
        time_server,
        True,
        "healthy",
    )
    assert sorted(server.tools.values_list("name", flat=True)) == ["add", "current_time", "echo"]
    listed = client.get("/v0.1/servers", headers={"Authorization": f"Bearer {token}"}).json()
    validate_server_list(listed)
    assert [(e["server"]["name"], e["server"]["remotes"]) for e in listed["servers"]] == [
        ("com.acme/clock", [{"type": "streamable-http", "url": "http://testserver/com-acme/clock/mcp"}])
    ]
    one = client.get(
        "/v0.1/servers/com.acme%2Fclock/versions/latest", headers={"Authorization": f"Bearer {token}"}
    ).json()
    assert one["server"]["remotes"] == [
        {"type": "streamable-http", "url": "http://testserver/com-acme/clock/mcp"}
    ]
    assert ServerVersion.objects.get().document["remotes"] == [remote]  # the document itself is kept


def test_entries_without_a_proxiable_remote_are_refused(client, admin, token_for):
    token = token_for(admin)
    publish(
        client,
        token,
        {"name": "com.acme/local", "description": "Runs locally", "version": "1.0.0"}
        | {
            "packages": [
                {
                    "registryType": "npm",
                    "identifier": "@acme/local",
                    "version": "1.0.0",
                    "transport": {"type": "stdio"},
                }
            ]
        },
    )
    principal = principal_for_user(admin, auth_method=AuthMethod.SESSION)

    with pytest.raises(CatalogRefused) as refused:
        version_put_behind_gateway(actor=principal, name="com.acme/local")

    assert refused.value.status == 400
    assert refused.value.message.startswith("com.acme/local has no remote the gateway can proxy")
    assert Server.objects.count() == 0


def test_only_administrators_put_servers_behind_the_gateway(client, admin, member, token_for):
    publish(
        client,
        token_for(admin),
        {"name": "com.acme/r", "description": "x", "version": "1.0.0"}
        | {"remotes": [{"type": "sse", "url": "https://r.example.test/sse"}]},
    )
    someone = principal_for_user(member("sam"), auth_method=AuthMethod.SESSION)

    with pytest.raises(CatalogRefused) as refused:
        version_put_behind_gateway(actor=someone, name="com.acme/r")

    assert refused.value.status == 403
    assert GatewayBinding.objects.count() == 0


def test_the_console_action_puts_the_selected_servers_behind_the_gateway(
    admin_client, client, admin, token_for
):
    publish(
        client,
        token_for(admin),
        {"name": "io.github.x/Remote.API", "description": "x", "version": "2.0.0"}
        | {"remotes": [{"type": "sse", "url": "https://r.example.test/sse"}]},
    )

    admin_client.post(
        reverse("admin:catalog_serverversion_changelist"),
        {"action": "put_behind_gateway", "_selected_action": [ServerVersion.objects.get().pk]},
    )

    server = Server.objects.get()
    assert (server.path, server.supported_transports) == ("/io-github-x/remote-api", ["sse"])
    assert gateway_path_for("io.github.x/Remote.API") == server.path
