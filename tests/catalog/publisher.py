"""The requests `mcp-publisher` (cmd/publisher in modelcontextprotocol/registry) sends, byte for byte
as its Go code builds them: it reads the token file `{token, registry}`, re-marshals server.json with
Go's encoding/json (compact, `<`, `>` and `&` escaped) and posts it to `<registry>/v0/publish`; `status`
first GETs the current status with `include_deleted=true`, then PATCHes `{status, statusMessage?}`.
Names and versions go through Go's `url.PathEscape` (`/` becomes `%2F`)."""

import json
from urllib.parse import quote

import requests

GO_HEADERS = {"User-Agent": "Go-http-client/1.1", "Accept-Encoding": "gzip"}


def go_marshal(value) -> bytes:
    """encoding/json.Marshal's bytes: compact, UTF-8, HTML-sensitive characters escaped."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for char, escape in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escape)
    return text.encode()


def path_escape(value: str) -> str:
    """Go's url.PathEscape: everything but unreserved characters and a few sub-delimiters."""
    return quote(value, safe="-_.~!$&'()*+,;=:@")


class Publisher:
    """One `mcp-publisher` with a token file pointing at `registry`."""

    def __init__(self, registry: str, token: str):
        self.registry = registry.rstrip("/") + "/"
        self.token = token

    def _send(self, method: str, url: str, body: bytes | None = None) -> requests.Response:
        headers = GO_HEADERS | {"Authorization": f"Bearer {self.token}"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        return requests.request(method, self.registry + url, data=body, headers=headers, timeout=30)

    def publish(self, document: dict) -> requests.Response:
        """`mcp-publisher publish`: success is 200 or 201 with a ServerResponse."""
        return self._send("POST", "v0/publish", go_marshal(document))

    def current_status(self, name: str, version: str) -> requests.Response:
        return self._send(
            "GET", f"v0/servers/{path_escape(name)}/versions/{path_escape(version)}?include_deleted=true"
        )

    def all_versions(self, name: str) -> requests.Response:
        return self._send("GET", f"v0/servers/{path_escape(name)}/versions?include_deleted=true")

    def status(self, name: str, version: str, status: str, message: str = "") -> requests.Response:
        """`mcp-publisher status --status S [--message M] NAME VERSION`: success is 200."""
        before = self.current_status(name, version)
        if before.status_code != 200:
            return before
        assert before.json()["_meta"]["io.modelcontextprotocol.registry/official"]["status"]
        body = {"status": status} | ({"statusMessage": message} if message else {})
        url = f"v0/servers/{path_escape(name)}/versions/{path_escape(version)}/status"
        return self._send("PATCH", url, go_marshal(body))

    def status_all(self, name: str, status: str, message: str = "") -> requests.Response:
        """`mcp-publisher status --status S --all-versions -y NAME`: 200 with `{updatedCount}`."""
        before = self.all_versions(name)
        if before.status_code != 200:
            return before
        body = {"status": status} | ({"statusMessage": message} if message else {})
        return self._send("PATCH", f"v0/servers/{path_escape(name)}/status", go_marshal(body))
