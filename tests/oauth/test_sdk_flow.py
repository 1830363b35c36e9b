"""The official Python SDK's OAuth client completes the MCP authorization flow against the registry served
on loopback, with Chromium as the user's browser, and reaches a real MCP server through the gateway with
nothing but its URL: discovery from the 401, registration (dynamic, or a metadata document served over
https on loopback), login and consent, the code exchanged with PKCE, then a refresh on its own."""

import time
from datetime import timedelta

import anyio
import pytest
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, RefreshToken

from accounts.models import AuditEvent
from oauth.models import Consent
from tests.browser.conftest import PASSWORD
from tests.factories import ServerFactory
from tests.gateway.gateway_calls import gateway_fixture  # noqa: F401
from tests.mcp_servers import time_server_fixture  # noqa: F401
from tests.oauth.flow import Browser, DocumentServer, MemoryStorage, loopback_certificate, provider, session

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def olga(member, scope_factory):
    """A user with a password who may list the tools of /clock and call `add` and `echo`."""
    scope_factory(
        "clock-users",
        group="clock-users",
        server_rules=[
            {
                "server": "/clock",
                "methods": ["initialize", "tools/list", "tools/call"],
                "tools": ["add", "echo"],
            }
        ],
    )
    scope_factory(
        "clock-time",
        group="clock-users",
        server_rules=[{"server": "/clock", "methods": ["tools/call"], "tools": ["current_time"]}],
    )
    user = member("olga", "clock-users")
    user.set_password(PASSWORD)
    user.save()
    return user


async def list_and_add(client):
    tools = sorted(tool.name for tool in (await client.list_tools()).tools)
    added = await client.call_tool("add", {"a": 2, "b": 3})
    return tools, added.content[0].text


@pytest.fixture
def clock(gateway, time_server):
    ServerFactory(path="/clock", proxy_pass_url=time_server)
    return gateway.url("/clock/mcp")


def test_the_sdk_registers_itself_logs_in_and_calls_tools_then_refreshes_on_its_own(clock, olga):
    browser, storage = Browser("olga", untick=("clock-time",)), MemoryStorage()

    tools, added = anyio.run(session, clock, provider(clock, browser, storage), list_and_add)

    # the consent narrowed olga's rights to clock-users: current_time is not offered
    assert (tools, added, browser.pages) == (["add", "echo"], "5", 1)
    application = Application.objects.get()
    assert (application.registration_source, application.name, application.client_type) == (
        "dcr",
        "Test Host",
        "public",
    )
    consent = Consent.objects.get()
    assert (consent.user, consent.all_rights, consent.scopes, consent.resources) == (
        olga,
        False,
        ["clock-users"],
        [clock],
    )
    token = AccessToken.objects.get(user=olga)  # (the other is the registration's own, RFC 7592)
    assert (token.resource, token.scope, token.token) == ([clock], "mcp", "")  # stored as a checksum only
    assert storage.tokens.access_token.startswith("mcpr_at_")
    assert AuditEvent.objects.filter(action="oauth.consent", actor=olga).count() == 1

    # an hour later the access token has expired: the SDK refreshes it, nobody is asked again
    first = storage.tokens
    AccessToken.objects.filter(user=olga).update(expires=timezone.now() - timedelta(minutes=1))
    later = provider(clock, browser, storage)
    later._initialized = True
    later.context.current_tokens, later.context.client_info = storage.tokens, storage.client_info
    later.context.token_expiry_time = time.time() - 1

    tools, added = anyio.run(session, clock, later, list_and_add)

    assert (tools, added, browser.pages) == (["add", "echo"], "5", 1)
    assert storage.tokens.access_token != first.access_token
    assert storage.tokens.refresh_token != first.refresh_token  # rotated
    assert RefreshToken.objects.filter(revoked__isnull=True).count() == 1


def test_the_sdk_uses_a_client_id_metadata_document_served_on_loopback(
    clock, olga, settings, tmp_path, monkeypatch
):
    settings.OAUTH_CIMD_ALLOW_LOOPBACK = True
    cert, key = loopback_certificate(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the registry trusts the host's certificate
    documents = DocumentServer(cert, key)
    try:
        document = documents.client_document("host.json")
        browser, storage = Browser("olga", remember=True), MemoryStorage()

        tools, added = anyio.run(session, clock, provider(clock, browser, storage, document), list_and_add)

        assert (tools, added, browser.pages) == (["add", "current_time", "echo"], "5", 1)
        application = Application.objects.get()
        assert (application.client_id, application.registration_source, application.name) == (
            document,
            "cimd",
            "Verified Host",
        )

        # a remembered consent is not asked again: a new host run authorizes without a consent page
        again = MemoryStorage()
        anyio.run(session, clock, provider(clock, browser, again, document), list_and_add)

        assert (browser.pages, len(browser.callbacks)) == (1, 2)
        assert again.tokens.access_token != storage.tokens.access_token
    finally:
        documents.stop()


def test_a_denied_consent_returns_the_standard_error_and_issues_nothing(clock, olga):
    browser = Browser("olga", allow=False)

    with pytest.raises(BaseExceptionGroup) as raised:  # the SDK gives up: its user said no
        anyio.run(session, clock, provider(clock, browser, MemoryStorage()), list_and_add)

    assert raised.group_contains(PermissionError, match="access_denied")

    assert "error=access_denied" in browser.callbacks[0]
    assert (AccessToken.objects.filter(user=olga).count(), Consent.objects.count()) == (0, 0)
