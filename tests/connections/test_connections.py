"""Each user's own secret for a server: connected on a page that needs their session, sealed at rest and
bound to its user and server, never shown or audited in clear, replaced, disconnected, pruned when it no
longer fits; the discovery connection for health checks, made by an administrator."""

import re

import pytest

from accounts.models import AuditEvent
from connections.choices import Purpose
from connections.models import UpstreamCredential
from connections.resolver import headers_for
from connections.services import credentials_prune
from servers.choices import HealthStatus
from servers.health import check_server
from servers.upstream_auth import CredentialMissing
from tests.factories import ServerFactory

pytestmark = pytest.mark.django_db

SECRET = "ghp_0123456789abcdefSECRET"


@pytest.fixture
def keyed(member, scope_factory):
    server = ServerFactory(
        path="/keyed", name="Keyed", upstream_auth="user_secret", user_secret_header="X-API-Key: key {secret}"
    )
    ServerFactory(path="/open", name="Open")
    rules = [{"server": "*", "methods": ["*"], "tools": ["*"]}]
    scope_factory("everything", group="users", server_rules=rules)
    return server


@pytest.fixture
def kim(member, keyed):
    return member("kim", "users")


def connect(client, secret=SECRET, path="/connections/keyed"):
    return client.post(path, {"secret": secret})


def test_the_page_lists_what_needs_the_users_credential_and_connecting_seals_it(client, kim, keyed):
    client.force_login(kim)
    before = client.get("/connections").content.decode()

    connected = connect(client)
    after = client.get("/connections").content.decode()

    assert re.findall(r'<tr data-connection="([^"]+)"', before) == ["/keyed"]
    assert 'data-state="not-connected"' in before
    assert (connected.status_code, connected["Location"]) == (302, "/connections")
    assert 'data-state="connected"' in after
    credential = UpstreamCredential.objects.get()
    assert (credential.user, credential.server, credential.purpose) == (kim, keyed, Purpose.USER)
    assert SECRET not in credential.sealed and SECRET not in after
    assert headers_for(keyed, principal_of(kim)) == {"X-API-Key": f"key {SECRET}"}
    event = AuditEvent.objects.get(action="connection.connect")
    assert (event.target, event.detail) == (
        "server:/keyed",
        {"purpose": "user", "user": "kim", "replaced": False},
    )


def test_a_bad_secret_is_refused_on_the_page_and_nothing_is_stored(client, kim):
    client.force_login(kim)

    blank = connect(client, "   ")
    broken = connect(client, "line\nbreak")

    assert blank.status_code == broken.status_code == 400
    assert "Enter the secret." in blank.content.decode()
    assert "printable ASCII, without line breaks" in broken.content.decode()
    assert UpstreamCredential.objects.count() == 0


def test_replacing_and_disconnecting(client, kim, keyed):
    client.force_login(kim)
    connect(client)

    connect(client, "second-secret")
    replaced = headers_for(keyed, principal_of(kim))
    asked = client.post("/connections/keyed/disconnect", headers={"Accept": "text/html"})
    kept = UpstreamCredential.objects.count()
    unconfirmed_script = client.post("/connections/keyed/disconnect")
    gone = client.post("/connections/keyed/disconnect", {"confirm": "yes"})

    assert replaced == {"X-API-Key": "key second-secret"}
    assert asked.status_code == 200 and "Disconnect Keyed?" in asked.content.decode()
    assert 'name="confirm" value="yes"' in asked.content.decode()
    assert kept == 1
    assert (unconfirmed_script.status_code, unconfirmed_script.json()["error_code"]) == (
        400,
        "confirmation_required",
    )
    assert gone.status_code == 302
    assert UpstreamCredential.objects.count() == 0
    assert list(
        AuditEvent.objects.filter(action__startswith="connection.")
        .order_by("id")
        .values_list("action", flat=True)
    ) == [
        "connection.connect",
        "connection.connect",
        "connection.disconnect",
    ]
    with pytest.raises(CredentialMissing) as missing:
        headers_for(keyed, principal_of(kim))
    assert (str(missing.value), missing.value.connect_path) == (
        "/keyed needs your own credential: connect it, then try again.",
        "/connections/keyed",
    )


def test_a_row_copied_to_another_user_does_not_open(client, kim, member, keyed):
    client.force_login(kim)
    connect(client)
    lee = member("lee", "users")
    stolen = UpstreamCredential.objects.get()
    UpstreamCredential.objects.create(
        server=keyed,
        user=lee,
        purpose=Purpose.USER,
        mode=stolen.mode,
        origin=stolen.origin,
        sealed=stolen.sealed,
    )

    with pytest.raises(CredentialMissing, match="changed since you connected it"):
        headers_for(keyed, principal_of(lee))


def test_a_server_moved_to_another_origin_asks_again_and_the_stale_row_is_pruned(client, kim, keyed):
    client.force_login(kim)
    connect(client)
    keyed.proxy_pass_url = "http://127.0.0.2:9/mcp"
    keyed.save()

    with pytest.raises(CredentialMissing, match="changed since you connected it"):
        headers_for(keyed, principal_of(kim))
    assert 'data-state="stale"' in client.get("/connections").content.decode()
    assert credentials_prune() == 1
    assert UpstreamCredential.objects.count() == 0


def test_a_deactivated_users_credential_is_pruned(client, kim):
    client.force_login(kim)
    connect(client)
    kim.is_active = False
    kim.save()

    assert credentials_prune() == 1
    assert credentials_prune() == 0


def test_service_accounts_and_other_servers_cannot_connect(client, member, keyed):
    robot = member("robot", "users", is_service_account=True)
    client.force_login(member("kim", "users"))

    not_needed = connect(client, path="/connections/open")
    unknown = connect(client, path="/connections/nowhere")

    assert not_needed.status_code == 404
    assert unknown.status_code == 404
    with pytest.raises(
        CredentialMissing, match="service accounts and callers without a registry account"
    ) as no:
        headers_for(keyed, principal_of(robot))
    assert no.value.connect_path is None
    assert UpstreamCredential.objects.count() == 0


def test_without_a_discovery_connection_the_health_check_says_so_and_the_admin_makes_one(admin_client, keyed):
    before = check_server(keyed)

    added = admin_client.post(
        "/admin/connections/upstreamcredential/add/", {"server": keyed.pk, "secret": "discovery-secret"}
    )
    listed = admin_client.get("/admin/connections/upstreamcredential/").content.decode()
    said = [str(message) for message in added.wsgi_request._messages]

    assert (before.status, before.detail) == (
        HealthStatus.NEEDS_CONNECTION,
        "/keyed needs a discovery connection (made by an administrator in the console).",
    )
    assert added.status_code == 302
    assert len(said) == 1 and "/keyed · discovery" in said[0]
    assert headers_for(keyed, None, Purpose.DISCOVERY) == {"X-API-Key": "key discovery-secret"}
    assert "discovery-secret" not in listed
    assert AuditEvent.objects.filter(action="connection.connect", detail__purpose="discovery").count() == 1


def principal_of(user):
    from accounts.choices import AuthMethod
    from accounts.principal import principal_for_user

    return principal_for_user(user, auth_method=AuthMethod.SESSION)


def test_the_console_refuses_a_bad_discovery_secret_and_offers_only_servers_that_need_one(
    admin_client, keyed
):
    offered = admin_client.get("/admin/connections/upstreamcredential/add/").content.decode()
    refused = admin_client.post(
        "/admin/connections/upstreamcredential/add/", {"server": keyed.pk, "secret": "two\nlines"}
    )

    assert re.findall(r'<option value="(\d+)"', offered) == [str(keyed.pk)]
    assert refused.status_code == 200
    assert "A secret is printable ASCII, without line breaks" in refused.content.decode()
    assert UpstreamCredential.objects.count() == 0


def test_the_server_page_sends_the_user_to_connect_their_credential(client, kim):
    client.force_login(kim)

    keyed_page = client.get("/servers/keyed").content.decode()
    open_page = client.get("/servers/open").content.decode()

    assert "data-needs-credential" in keyed_page and 'href="/connections/keyed"' in keyed_page
    assert "data-needs-credential" not in open_page


def test_a_server_users_sign_in_to_gets_its_discovery_connection_by_a_sign_in_not_a_secret(
    admin_client, settings
):
    settings.UPSTREAM_OAUTH_ALLOW_LOOPBACK = True
    signed = ServerFactory(
        path="/signed", upstream_auth="user_oauth", proxy_pass_url="http://127.0.0.1:9/mcp"
    )

    refused = admin_client.post(
        "/admin/connections/upstreamcredential/add/", {"server": signed.pk, "secret": "a-secret"}
    ).content.decode()
    page = admin_client.get("/servers/signed").content.decode()

    assert (
        'make its discovery connection by a sign-in at <a href="/connections/signed?purpose=discovery">'
        in refused
    )
    assert 'href="/connections/signed?purpose=discovery"' in page
    assert UpstreamCredential.objects.count() == 0


def test_an_operator_enters_the_registrys_client_and_sign_ins_use_it_first(admin_client):
    from connections.models import UpstreamClient
    from connections.oauth.client import identity_for
    from connections.oauth.discovery import UpstreamAuthorization

    added = admin_client.post(
        "/admin/connections/upstreamclient/add/",
        {
            "issuer": "https://login.example.com/",
            "client_id": "registry-at-example",
            "client_secret": "s3cret",
            "redirect_uri": "https://registry.example.com/connections/oauth/callback",
        },
    )
    refused = admin_client.post(
        "/admin/connections/upstreamclient/add/",
        {"issuer": "login.example.com", "client_id": "", "redirect_uri": "https://r.example.com/cb"},
    )
    listed = admin_client.get("/admin/connections/upstreamclient/").content.decode()
    authorization = UpstreamAuthorization(
        resource="https://mcp.example.com/mcp",
        scopes=(),
        issuer="https://login.example.com",
        authorization_endpoint="https://login.example.com/authorize",
        token_endpoint="https://login.example.com/token",
        registration_endpoint="https://login.example.com/register",
        revocation_endpoint=None,
        client_id_metadata_document_supported=True,
        iss_parameter_supported=True,
    )

    identity = identity_for(authorization, server_url="https://mcp.example.com/mcp", base="https://r.test")

    assert added.status_code == 302
    assert (
        "Enter the authorization server&#x27;s issuer URL and the client id it gave."
        in refused.content.decode()
    )
    assert "registry-at-example" in listed and "s3cret" not in listed
    [client] = UpstreamClient.objects.all()
    assert (client.issuer, client.entered, "s3cret" in client.sealed_secret) == (
        "https://login.example.com",
        True,
        False,
    )
    assert (identity.client_id, identity.client_secret, identity.how, identity.redirect_uri) == (
        "registry-at-example",
        "s3cret",
        "entered",
        "https://registry.example.com/connections/oauth/callback",
    )
    assert AuditEvent.objects.filter(action="upstream_client.enter").count() == 1
