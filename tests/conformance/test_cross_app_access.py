"""The conformance suite's client scenario of cross-app access (`auth/cross-app-access-complete-flow`: the
enterprise-managed authorization extension, SEP-990), with the registry as the client: the suite runs its
identity provider, its authorization server (which takes only `jwt-bearer`, with client_secret_basic) and
its MCP server, and checks each request it gets. The registry is set up as an operator would from what the
suite hands its client (the login's identity provider and ID token, the client at the authorization
server), and reaches the suite's server in the `cross_app_access` mode as its user."""

import json
import sys
import threading
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
import pytest
from django.db import close_old_connections

from accounts.services import provider_sign_in_keep
from connections.oauth.discovery import discover
from connections.services import upstream_client_enter
from tests.conformance.suite import HERE, failed_checks, run_client_suite
from tests.factories import ServerFactory
from tests.gateway.gateway_calls import gateway_fixture, run  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

SCENARIO = "auth/cross-app-access-complete-flow"


class Handoff:
    """A loopback endpoint the suite's client command posts its server URL and context to; `reach` answers."""

    def __init__(self, reach):
        answered = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                try:
                    status, body = 200, reach(payload["server_url"], payload["context"])
                except Exception as failed:  # the suite's client fails, and the test says why
                    status, body = 500, f"{type(failed).__name__}: {failed}"
                finally:
                    close_old_connections()
                answered.append(body)
                self.send_response(status)
                self.send_header("Content-Length", str(len(body.encode())))
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *args):
                return None

        self.answered = answered
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"

    def stop(self):
        self.server.shutdown()


def test_the_registry_passes_the_suites_cross_app_access_flow_as_a_client(
    gateway, settings, member, scope_factory, token_for, tmp_path
):
    settings.CROSS_APP_ACCESS_ENABLED = True
    settings.UPSTREAM_OAUTH_ALLOW_LOOPBACK = True
    scope_factory("all", group="users", server_rules=[{"server": "*", "methods": ["*"], "tools": ["*"]}])

    def reach(server_url: str, context: dict) -> str:
        settings.SOCIALACCOUNT_PROVIDERS = {
            "openid_connect": {
                "APPS": [
                    {
                        "provider_id": "corp",
                        "name": "Corp",
                        "client_id": context["idp_client_id"],
                        "secret": "the-registry-at-the-identity-provider",
                        "settings": {"server_url": context["idp_issuer"]},
                    }
                ]
            }
        }
        user = member("xavier", "users")
        expires = jwt.decode(context["idp_id_token"], options={"verify_signature": False})["exp"]
        provider_sign_in_keep(
            user=user,
            provider="corp",
            issuer=context["idp_issuer"],
            id_token=context["idp_id_token"],
            refresh_token="",
            id_token_expires_at=datetime.fromtimestamp(expires, UTC),
        )
        upstream_client_enter(
            actor=None,
            issuer=discover(server_url).issuer,
            client_id=context["client_id"],
            client_secret=context["client_secret"],
            redirect_uri=gateway.url("/connections/oauth/callback"),
        )
        ServerFactory(path="/xaa", proxy_pass_url=server_url, upstream_auth="cross_app_access")

        async def tools(client):
            return sorted(tool.name for tool in (await client.list_tools()).tools)

        return json.dumps(run(gateway.url("/xaa/mcp"), token_for(user), tools))

    handoff = Handoff(reach)
    try:
        verdicts = run_client_suite(
            f"{sys.executable} {HERE / 'xaa_client.py'}",
            tmp_path,
            scenario=SCENARIO,
            env={"HANDOFF_URL": handoff.url},
        )
    finally:
        handoff.stop()

    assert handoff.answered and handoff.answered[0].startswith("["), handoff.answered
    assert verdicts == {SCENARIO: True}, failed_checks(tmp_path)
