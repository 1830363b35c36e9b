"""Fixtures of the authorization server's tests: a user with rights on /alpha and /beta, the two servers,
an MCP host speaking plain HTTP to the registry with that user logged in, and https documents on
loopback (client metadata documents)."""

import base64
import hashlib
import re
import secrets
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests

from tests.browser.conftest import PASSWORD
from tests.factories import ServerFactory
from tests.gateway.gateway_calls import gateway_fixture  # noqa: F401
from tests.mcp_servers import time_server_fixture  # noqa: F401
from tests.oauth.flow import REDIRECT_URI, DocumentServer, loopback_certificate

VERIFIER = secrets.token_urlsafe(48)
CHALLENGE = base64.urlsafe_b64encode(hashlib.sha256(VERIFIER.encode()).digest()).rstrip(b"=").decode()


@pytest.fixture
def olga(member, scope_factory):
    for path in ("/alpha", "/beta"):
        scope_factory(
            f"{path[1:]}-users",
            group="users",
            server_rules=[{"server": path, "methods": ["*"], "tools": ["*"]}],
        )
    user = member("olga", "users")
    user.set_password(PASSWORD)
    user.save()
    return user


@pytest.fixture
def servers(time_server):
    ServerFactory(path="/alpha", proxy_pass_url=time_server)
    ServerFactory(path="/beta", proxy_pass_url=time_server)


class Host:
    """An MCP host speaking plain HTTP to the registry on loopback, its user logged in."""

    def __init__(self, base: str):
        self.base = base
        self.browser = requests.Session()
        page = self.browser.get(f"{base}/login")
        token = page.cookies.get("csrftoken") or self.browser.cookies.get("csrftoken")
        self.browser.post(
            f"{base}/login",
            data={"username": "olga", "password": PASSWORD, "csrfmiddlewaretoken": token},
            headers={"Referer": f"{base}/login"},
        )

    def register(self, **metadata) -> requests.Response:
        document = {
            "client_name": "Plain Host",
            "redirect_uris": [REDIRECT_URI],
            "token_endpoint_auth_method": "none",
        }
        return requests.post(f"{self.base}/oauth/register", json={**document, **metadata})

    def authorize(self, client_id: str, resource: str | None, **overrides) -> requests.Response:
        params = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT_URI,
            "state": "s1",
            "code_challenge": CHALLENGE,
            "code_challenge_method": "S256",
            "scope": "mcp",
            **({"resource": resource} if resource else {}),
            **overrides,
        }
        params = {key: value for key, value in params.items() if value is not None}
        return self.browser.get(f"{self.base}/oauth/authorize?{urlencode(params)}", allow_redirects=False)

    def consent(self, page: requests.Response, *, allow: bool = True, remember: bool = False) -> str:
        """Answer the consent page; the URL the registry sends the browser to."""
        inputs = inputs_of(page.text)
        form = {name: value for name, value in inputs if name not in ("rights", "remember")}
        form["rights"] = [value for name, value in inputs if name == "rights"]  # all, as shown checked
        if allow:
            form["allow"] = "on"
        if remember:
            form["remember"] = "on"
        answer = self.browser.post(
            f"{self.base}/oauth/authorize", data=form, headers={"Referer": page.url}, allow_redirects=False
        )
        assert answer.status_code == 302, answer.text[:500]
        return answer.headers["Location"]

    def exchange(self, client_id: str, code: str, resource: str) -> requests.Response:
        """POST /oauth/token: the code for tokens, with the verifier of every authorization here."""
        return requests.post(
            f"{self.base}/oauth/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": REDIRECT_URI,
                "client_id": client_id,
                "code_verifier": VERIFIER,
                "resource": resource,
            },
        )

    def tokens(self, resource: str, scope: str = "mcp") -> dict:
        client_id = self.register().json()["client_id"]
        location = self.consent(self.authorize(client_id, resource, scope=scope))
        code = parse_qs(urlsplit(location).query)["code"][0]
        answer = self.exchange(client_id, code, resource)
        assert answer.status_code == 200, answer.text
        return {**answer.json(), "client_id": client_id}


def inputs_of(html: str) -> list[tuple[str, str]]:
    found = []
    for tag in re.findall(r"<input[^>]*>", html):
        name = re.search(r'name="([^"]*)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        if name:
            found.append((name.group(1), (value.group(1) if value else "").replace("&amp;", "&")))
    return found


def error_of(location: str) -> str:
    return parse_qs(urlsplit(location).query)["error"][0]


@pytest.fixture
def host(gateway, olga):
    return Host(gateway.url(""))


@pytest.fixture
def documents(tmp_path, settings, monkeypatch):
    settings.OAUTH_CIMD_ALLOW_LOOPBACK = True
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "CIMD_FETCH_TIMEOUT_SECONDS": 1}
    cert, key = loopback_certificate(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    served = DocumentServer(cert, key)
    yield served
    served.stop()
