"""Run the loopback OpenID Connect provider (tests/oidc/provider.mjs) from tests.

The provider is the npm package ``oidc-provider`` (pinned in package.json, installed by
``make install-test``).  Everything runs on 127.0.0.1; nothing is fetched at run time.

Claims: ``sub`` is the login name (the key in ``accounts``); every other claim comes from
the account's dict.  ``groups`` is released for the ``profile`` scope (and for an extra
``groups`` scope), both in the ID token and at userinfo; ``email``/``email_verified`` for
``email``.  Client-credentials access tokens requested with ``resource=<uri>`` are RS256
JWTs (JWKS at ``<issuer>/jwks``) with ``aud=<uri>``, ``iss``, ``client_id``, ``sub`` (the
client id) and ``groups`` (``cc_groups``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterable
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin

import requests

OIDC_DIR = Path(__file__).resolve().parent
PROVIDER_SCRIPT = OIDC_DIR / "provider.mjs"
NODE_MODULES = OIDC_DIR / "node_modules"

READY_TIMEOUT = 20.0


class ProviderError(RuntimeError):
    pass


class Provider:
    """A running provider.mjs process; use as a context manager or call ``stop()``."""

    def __init__(self, process: subprocess.Popen, issuer: str, output: list[str], pump: threading.Thread):
        self.process = process
        self.issuer = issuer
        self._output = output
        self._pump = pump

    @property
    def output(self) -> str:
        """Everything the process printed so far (stdout and stderr)."""
        return "".join(self._output)

    def exchanges(self) -> list[str]:
        """The identity assertions issued so far: "<login> <audience> <resource>" each."""
        return [
            line.removeprefix("EXCHANGE ").strip()
            for line in self.output.splitlines()
            if line.startswith("EXCHANGE ")
        ]

    @property
    def discovery_url(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"

    @property
    def token_endpoint(self) -> str:
        return f"{self.issuer}/token"

    @property
    def jwks_uri(self) -> str:
        return f"{self.issuer}/jwks"

    def stop(self, timeout: float = 5.0) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=timeout)
        self._pump.join(timeout=timeout)  # reaches EOF once the process is gone

    def __enter__(self) -> Provider:
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()


def start_provider(
    *,
    port: int,
    client_id: str,
    client_secret: str,
    redirect_uri: str,
    accounts: dict,
    password: str,
    cc_groups: Iterable[str] = (),
    id_jag_clients: dict | None = None,
    step_up: Iterable[str] = (),
) -> Provider:
    """Start provider.mjs on 127.0.0.1:<port> and wait for it to be ready."""
    if not (NODE_MODULES / "oidc-provider").is_dir():
        raise ProviderError(
            f"{NODE_MODULES} is missing (the oidc-provider npm package is not installed); "
            "run `make install-test`"
        )
    node = shutil.which("node")
    if node is None:
        raise ProviderError("`node` was not found on PATH; Node.js is needed for the test OIDC provider")

    env = dict(os.environ)
    env.update(
        OIDC_PORT=str(port),
        OIDC_CLIENT_ID=client_id,
        OIDC_CLIENT_SECRET=client_secret,
        OIDC_REDIRECT_URI=redirect_uri,
        OIDC_ACCOUNTS=json.dumps(accounts),
        OIDC_PASSWORD=password,
        OIDC_CC_GROUPS=",".join(cc_groups),
        OIDC_ID_JAG_CLIENTS=json.dumps(id_jag_clients or {}),
        OIDC_STEP_UP=",".join(step_up),
    )
    env.pop("NODE_OPTIONS", None)
    process = subprocess.Popen(
        [node, str(PROVIDER_SCRIPT)],
        cwd=OIDC_DIR,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )

    output: list[str] = []
    ready = threading.Event()
    issuer_box: list[str] = []

    def pump() -> None:
        # Drain the pipe for the whole life of the process so it never blocks.
        for line in process.stdout:
            output.append(line)
            if not ready.is_set() and line.startswith("READY "):
                issuer_box.append(line.split(" ", 1)[1].strip())
                ready.set()
        ready.set()  # EOF: the process is gone

    pump_thread = threading.Thread(target=pump, name=f"oidc-provider-{port}", daemon=True)
    pump_thread.start()

    deadline = time.monotonic() + READY_TIMEOUT
    while not ready.wait(0.1):
        if time.monotonic() > deadline:
            break
    if not issuer_box:
        exited_early = process.poll() is not None
        if not exited_early:
            process.kill()
        process.wait(timeout=5)
        pump_thread.join(timeout=5)  # collect the last output
        what = (
            f"exited with code {process.returncode} before it was ready"
            if exited_early
            else f"did not become ready within {READY_TIMEOUT:.0f}s (killed)"
        )
        raise ProviderError(f"OIDC provider on port {port} {what}; output:\n{''.join(output)}")
    return Provider(process, issuer_box[0], output, pump_thread)


class _Form:
    def __init__(self, action: str | None, method: str):
        self.action = action
        self.method = method
        self.fields: dict[str, str] = {}
        self.field_names: list[str] = []
        self.submit: tuple[str, str] | None = None


class _FormParser(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.forms: list[_Form] = []
        self._current: _Form | None = None

    def handle_starttag(self, tag, attrs):
        attrs = {k: (v if v is not None else "") for k, v in attrs}
        if tag == "form":
            self._current = _Form(attrs.get("action"), attrs.get("method", "get").lower())
            self.forms.append(self._current)
        elif self._current is not None and tag in ("input", "button", "textarea", "select"):
            name = attrs.get("name")
            if not name:
                return
            kind = attrs.get("type", "submit" if tag == "button" else "text").lower()
            if kind == "submit":
                if self._current.submit is None:
                    self._current.submit = (name, attrs.get("value", ""))
                return
            if kind in ("checkbox", "radio") and "checked" not in attrs:
                return
            self._current.field_names.append(name)
            self._current.fields[name] = attrs.get("value", "")

    def handle_endtag(self, tag):
        if tag == "form":
            self._current = None


def _forms(response: requests.Response) -> list[_Form]:
    parser = _FormParser()
    parser.feed(response.text)
    return parser.forms


def _follow(session: requests.Session, response: requests.Response) -> requests.Response:
    """Follow redirects by hand (for sessions with redirects off or a not-yet-followed response)."""
    hops = 0
    while response.is_redirect and hops < 30:
        location = urljoin(response.url, response.headers["location"])
        response = session.get(location, allow_redirects=True)
        hops += 1
    return response


def drive_login(
    session: requests.Session,
    response: requests.Response,
    *,
    login: str,
    password: str,
) -> requests.Response:
    """Complete the provider's sign-in for ``response`` (the login page, or a redirect to it).

    Submits the login form (fields ``login``/``password``), then any further form the
    provider shows (consent is normally granted automatically), following every redirect
    with ``session`` -- so the relying party's callback is requested by ``session`` too.
    Returns the final response: normally the relying party's page after its callback.
    With a wrong password the provider's login page comes back with status 401 and
    ``id="login-error"``; that response is returned as is (no retry).
    """
    response = _follow(session, response)
    submitted_login = False
    for _ in range(10):
        forms = [f for f in _forms(response) if f.method == "post"]
        login_form = next((f for f in forms if "login" in f.field_names or "password" in f.field_names), None)
        if login_form is not None:
            if submitted_login:
                return response  # login rejected: the form came back with an error
            data = dict(login_form.fields)
            data.update(login=login, password=password)
            form = login_form
            submitted_login = True
        elif forms and _is_provider_page(response):
            form = forms[0]
            data = dict(form.fields)
            if form.submit is not None:
                data.setdefault(*form.submit)
        else:
            return response
        action = urljoin(response.url, form.action or response.url)
        response = _follow(session, session.post(action, data=data, allow_redirects=True))
    raise ProviderError(
        f"sign-in did not finish after 10 forms; last page {response.url}:\n{response.text[:2000]}"
    )


def _is_provider_page(response: requests.Response) -> bool:
    # Pages rendered by provider.mjs (interaction / consent / logout); never the relying party's.
    return "/interaction/" in response.url or "/session/end" in response.url


def client_credentials_token(provider: Provider, *, client_id: str, client_secret: str, resource: str) -> str:
    """Return a client-credentials JWT access token with ``aud == resource``."""
    response = requests.post(
        provider.token_endpoint,
        data={"grant_type": "client_credentials", "resource": resource},
        auth=(client_id, client_secret),
        timeout=10,
    )
    if response.status_code != 200:
        raise ProviderError(f"client_credentials grant failed: {response.status_code} {response.text}")
    return response.json()["access_token"]
