"""An upstream that wants each user's own sign-in: a second instance of this registry (tests/catalog/peer.py),
whose gateway fronts a real MCP server at `/clock` (and, when asked, a real A2A agent at `/helper`) and
whose authorization server signs its users in,
so both ends of the sign-in are real code. It fetches client metadata documents from loopback over https,
trusting the test's certificate. And the user at Chromium going through both consent pages."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import psycopg
import pytest
from playwright.async_api import Error as PlaywrightError

from tests.browser.conftest import PASSWORD
from tests.catalog.peer import start_peer, stop_peer
from tests.chromium import in_context
from tests.conftest import run_manage
from tests.mcp_servers import UvicornThread, loopback_socket

UPSTREAM_USERS = ("alice-up", "bob-up")

SETUP = """
from django.contrib.auth.models import Group
from accounts.models import Scope, User
from servers.models import Server
group = Group.objects.create(name="clock-users")
scope = Scope.objects.create(
    name="clock-users", server_rules=[{{"server": "/clock", "methods": ["*"], "tools": ["*"]}}],
    ui_permissions={{}}, publish_names=[],
)
scope.groups.add(group)
for name in {users!r}:
    user = User.objects.create(username=name, email=name + "@example.test")
    user.set_password({password!r})
    user.save()
    user.groups.add(group)
Server.objects.create(path="/clock", name="Clock", proxy_pass_url={server!r}, is_enabled=True)
"""

# An A2A agent behind the upstream's gateway at `/helper`, which its users may message.
AGENT_SETUP = """
from agents.models import Agent
Agent.objects.create(
    path="/helper", name="Helper", description="Echoes", url={agent!r}, version="1.0.0",
    protocol_version="1.0", preferred_transport="JSONRPC", capabilities={{"streaming": True}},
    visibility="public", is_enabled=True,
)
scope.server_rules = scope.server_rules + [{{"server": "/helper", "methods": ["*"]}}]
scope.save()
"""


@dataclass
class Upstream:
    url: str
    database_url: str
    env: dict

    @property
    def server_url(self) -> str:
        return f"{self.url}/clock/mcp"

    @property
    def agent_url(self) -> str:
        return f"{self.url}/helper/a2a"

    def user_of(self, access_token: str) -> str | None:
        """The upstream's user an access token of it acts as."""
        checksum = hashlib.sha256(access_token.encode()).hexdigest()
        with psycopg.connect(self.database_url) as database:
            row = database.execute(
                "SELECT u.username FROM oauth2_provider_accesstoken t "
                "JOIN accounts_user u ON u.id = t.user_id WHERE t.token_checksum = %s",
                (checksum,),
            ).fetchone()
        return row[0] if row else None

    def clients(self) -> list[str]:
        with psycopg.connect(self.database_url) as database:
            return [row[0] for row in database.execute("SELECT client_id FROM oauth2_provider_application")]

    def shell(self, code: str) -> None:
        """Run `code` in the upstream's own Django (its writes move its caches' epochs, as in production)."""
        done = run_manage("shell", "-c", code, env=self.env)
        assert done.returncode == 0, done.stderr

    def expire_access_tokens(self, username: str) -> None:
        self.shell(
            "from datetime import timedelta\n"
            "from django.utils import timezone\n"
            "from oauth2_provider.models import AccessToken\n"
            f"for token in AccessToken.objects.filter(user__username={username!r}):\n"
            "    token.expires = timezone.now() - timedelta(hours=1)\n"
            "    token.save()\n"
        )

    def revoke_sign_ins(self, username: str) -> None:
        """What the user's "revoke" of the application at the upstream does (RFC 7009 on every token)."""
        self.shell(
            "from oauth2_provider.models import RefreshToken\n"
            f"for token in RefreshToken.objects.filter(user__username={username!r}, revoked=None):\n"
            "    token.revoke()\n"
        )


@pytest.fixture(name="secure_gateway")
def secure_gateway_fixture(certificate):
    """The registry served over https on loopback (its client id is then an https URL)."""
    from registry_site.asgi import application

    running = UvicornThread(application, loopback_socket(), tls=certificate).start()
    yield running
    running.stop()


def start_upstream(
    log_dir,
    *,
    clock_url: str,
    certificate,
    agent_url: str | None = None,
    env: dict | None = None,
    more_setup: str = "",
) -> tuple[Upstream, object, str]:
    """The upstream, with the MCP server at `clock_url` behind it at `/clock` (and the A2A agent at
    `agent_url` at `/helper`, when given); `env` adds settings, `more_setup` code run after the setup."""
    env_extra = {"OAUTH_CIMD_ALLOW_LOOPBACK": "true", "SSL_CERT_FILE": str(certificate), **(env or {})}
    setup = SETUP.format(users=UPSTREAM_USERS, password=PASSWORD, server=clock_url)
    if agent_url is not None:
        setup += AGENT_SETUP.format(agent=agent_url)
    setup += more_setup
    peer, group, name = start_peer(log_dir, env_extra=env_extra, setup=setup)
    return Upstream(peer.url, peer.database_url, peer.env), group, name


async def sign_in(connect_url: str, *, user: str, upstream_user: str, catch_callback: bool = False) -> str:
    """The user at Chromium: opens the connect URL the MCP host showed, logs in to the registry if asked,
    continues to the upstream's sign-in, logs in there and allows. The page they end on (its URL and
    text), or, with `catch_callback`, the callback URL the upstream sent them to, not followed."""

    async def go(context):
        page = await context.new_page()
        page.set_default_timeout(20_000)
        caught: list[str] = []
        seen: list[str] = []
        page.on("response", lambda response: seen.append(f"{response.status} {response.url[:150]}"))
        if catch_callback:  # the consent's answer is sent, its redirect to our callback kept, not followed

            async def catch(route):
                if route.request.method != "POST":
                    return await route.continue_()
                answer = await route.fetch(max_redirects=0)
                caught.append(answer.headers["location"])
                await route.fulfill(status=200, body="caught")

            await page.route(lambda url: "/oauth/authorize" in url, catch)
        try:
            await page.goto(connect_url)
            await _log_in(page, user)
            await page.click("#sign-in button[type=submit]")
            await page.wait_for_url(lambda url: "/login" in url or "/oauth/authorize" in url)
            await _log_in(page, upstream_user)
            await page.click("#allow")
            if catch_callback:
                await page.wait_for_url(lambda url: bool(caught))
                return caught[-1]
            await page.wait_for_url(lambda url: "/connections" in url and "/oauth/" not in url)
            return f"{page.url}\n{await page.inner_text('main')}"
        except PlaywrightError as failed:
            raise AssertionError(
                f"{failed}\nafter {seen}\nat {page.url}:\n{(await page.inner_text('main'))[:2000]}"
            ) from None

    return await in_context(go, ignore_https_errors=True)


async def open_as(url: str, *, user: str) -> str:
    """The text of the page `url` shows `user` once logged in to the registry."""

    async def read(context):
        page = await context.new_page()
        page.set_default_timeout(20_000)
        await page.goto(url)
        await _log_in(page, user)
        await page.wait_for_load_state()
        return await page.inner_text("main")

    return await in_context(read, ignore_https_errors=True)


async def _log_in(page, username: str) -> None:
    if "/login" not in page.url:
        return
    await page.fill("#username", username)
    await page.fill("#password", PASSWORD)
    await page.click("button[type=submit]")
    await page.wait_for_url(lambda url: "/login" not in url)


__all__ = ["Upstream", "open_as", "secure_gateway_fixture", "sign_in", "start_upstream", "stop_peer"]
