"""An MCP host connecting by URL alone: the official SDK's OAuth client provider, with Chromium as the
user's browser (it logs in and answers the consent page), and the pieces a host brings: a loopback
redirect URI and, for Client ID Metadata Documents, an https document server on loopback."""

from __future__ import annotations

import datetime
import http.server
import ipaddress
import json
import ssl
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from tests.browser.conftest import PASSWORD
from tests.chromium import in_context

REDIRECT_URI = "http://127.0.0.1:33418/callback"  # never listened on: the browser's request is caught


class MemoryStorage:
    """What a host keeps between runs: its registration and its tokens."""

    def __init__(self):
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


@dataclass
class Browser:
    """The user at Chromium: logs in as `username` when asked, then allows (or denies) on the consent
    page, unticking `untick` rights first. `pages` counts consent pages shown."""

    username: str
    allow: bool = True
    untick: tuple[str, ...] = ()
    remember: bool = False
    pages: int = 0
    callbacks: list[str] = field(default_factory=list)

    async def authorize(self, url: str) -> str:
        """Open the authorization URL; the URL the registry finally redirects to."""
        caught: list[str] = []

        async def answer(context):
            page = await context.new_page()
            page.set_default_timeout(15_000)

            async def catch(route):
                caught.append(route.request.url)
                await route.fulfill(status=200, body="You may close this window.")

            await page.route("http://127.0.0.1:33418/**", catch)
            await page.goto(url)
            if "/login" in page.url:
                await page.fill("#username", self.username)
                await page.fill("#password", PASSWORD)
                await page.click("button[type=submit]")
                await _until(lambda: caught or "/login" not in page.url)
                await page.wait_for_load_state()
            if not caught and "/oauth/authorize" in page.url and await page.locator("#deny").count():
                self.pages += 1
                for name in self.untick:
                    await page.uncheck(f"input[name=rights][value='{name}']")
                if self.remember:
                    await page.check("input[name=remember]")
                await page.click("#allow" if self.allow else "#deny")
                await _until(lambda: caught)
            await _until(lambda: caught, seconds=5)
            return page.url if caught else (page.url, (await page.content())[:3000])

        final = await in_context(answer)
        assert caught, f"the registry never sent the browser back to the host: {final}"
        self.callbacks.append(caught[-1])
        return caught[-1]


async def _until(condition, seconds: float = 15) -> None:
    for _ in range(int(seconds * 20)):
        if condition():
            return
        await anyio.sleep(0.05)


def provider(url: str, browser: Browser, storage: MemoryStorage, metadata_url: str | None = None):
    """The SDK's OAuth client for the gateway URL `url`, as an MCP host configures it."""
    pending: dict = {}

    async def redirect(authorization_url: str) -> None:
        pending["callback"] = await browser.authorize(authorization_url)

    async def callback() -> AuthorizationCodeResult:
        query = parse_qs(urlsplit(pending.pop("callback")).query)
        if "error" in query:
            raise PermissionError(query["error"][0])
        return AuthorizationCodeResult(
            code=query["code"][0], state=query["state"][0], iss=query.get("iss", [None])[0]
        )

    return OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="Test Host",
            redirect_uris=[REDIRECT_URI],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect,
        callback_handler=callback,
        client_metadata_url=metadata_url,
    )


async def session(url: str, auth: OAuthClientProvider, work):
    """`work(client)` in an MCP session through the gateway with nothing but the URL and `auth`."""
    async with httpx2.AsyncClient(auth=auth, timeout=httpx2.Timeout(30)) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy", cache=None) as client:
            return await work(client)


# -- a Client ID Metadata Document served over https on loopback -------------------------------------


def loopback_certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for localhost and 127.0.0.1 (its own CA): (certificate, key) files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "loopback.pem", directory / "loopback.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


class DocumentServer:
    """https://localhost:<port>/<name>: documents set by the test, each with an optional delay."""

    def __init__(self, cert: Path, key: Path):
        self.documents: dict[str, tuple[bytes, str, float]] = {}
        documents = self.documents

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body, content_type, delay = documents.get(self.path, (b"{}", "application/json", 0.0))
                if delay:
                    threading.Event().wait(delay)
                self.send_response(200 if self.path in documents else 404)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, name: str) -> str:
        return f"https://localhost:{self.port}/{name}"

    def put(self, name: str, document, *, delay: float = 0.0, content_type: str = "application/json") -> str:
        body = document if isinstance(document, bytes) else json.dumps(document).encode()
        self.documents[f"/{name}"] = (body, content_type, delay)
        return self.url(name)

    def client_document(self, name: str, **overrides) -> str:
        """A host's metadata document whose client_id is its own URL."""
        document = {
            "client_id": self.url(name),
            "client_name": "Verified Host",
            "redirect_uris": [REDIRECT_URI],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            **overrides,
        }
        return self.put(name, document)

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
