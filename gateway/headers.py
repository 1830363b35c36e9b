"""Which headers cross the gateway, and the checks made on them before anything is forwarded.

The rule, both ways: the MCP protocol's own headers (every header whose name starts with `Mcp-`:
`Mcp-Session-Id`, `MCP-Protocol-Version`, and 2026-07-28's `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*`)
and the content headers of the exchange (`Accept`, `Content-Type`, `Last-Event-ID` on the way in;
`Content-Type`, `Cache-Control` on the way out). Nothing else: the client's credentials, cookies and
any identity header stay here, the server's outbound headers are added, and the server's cookies or
authentication challenges never reach the client.

Before forwarding: the `Host` must be one of ALLOWED_HOSTS and an `Origin`, when a browser sends one,
one of the registry's hosts or CORS_ALLOWED_ORIGINS (DNS rebinding; the MCP transport requires the
check). Pages of those origins get the CORS headers Django's other JSON APIs give them (django-cors-headers,
same settings): preflights answered before any credential is looked at, `Mcp-Session-Id` and
`WWW-Authenticate` exposed. A POST whose protocol headers disagree with its body is refused: the body is
what is authorized, and a header that says otherwise would let something in front of the server see
another request.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp.shared.inbound import decode_header_value  # the protocol's own codec (`=?base64?...?=`)

from gateway import jsonrpc

PROTOCOL_PREFIX = b"mcp-"
REQUEST_HEADERS = frozenset({b"accept", b"content-type", b"last-event-id"})
RESPONSE_HEADERS = frozenset({"content-type", "cache-control"})
ROUTING_HEADERS = (b"mcp-protocol-version", b"mcp-method", b"mcp-name")


def forwarded_request_headers(scope) -> dict[str, str]:
    """The client's headers that go on to the server (the rule above)."""
    return {
        key.decode("latin-1"): value.decode("latin-1")
        for key, value in scope.get("headers", [])
        if key in REQUEST_HEADERS or key.startswith(PROTOCOL_PREFIX)
    }


def forwarded_response_headers(headers) -> list[tuple[bytes, bytes]]:
    """The server's answer headers that go on to the client (the rule above)."""
    return [
        (name.lower().encode("latin-1"), value.encode("latin-1"))
        for name, value in headers.items()
        if name.lower() in RESPONSE_HEADERS or name.lower().startswith("mcp-")
    ]


def has_param_headers(scope) -> bool:
    """Whether the request carries 2026-07-28 `Mcp-Param-*` headers (nginx cannot name them all, so such a
    request is never handed to it)."""
    return any(key.startswith(b"mcp-param-") for key, _ in scope.get("headers", []))


def first(scope, name: bytes) -> str:
    """The first value of a request header (lower-case name), or ""."""
    values = _values(scope, name)
    return values[0] if values else ""


def _values(scope, name: bytes) -> list[str]:
    return [value.decode("latin-1") for key, value in scope.get("headers", []) if key == name]


def origin_problem(scope) -> str | None:
    """Why the request's Host or Origin is not one the gateway serves, or None."""
    hosts = _values(scope, b"host")
    domain, _ = split_domain_port(hosts[0] if len(hosts) == 1 else "")
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return "The Host header names no host this registry serves (ALLOWED_HOSTS)."
    origins = _values(scope, b"origin")
    if not origins:
        return None  # not a browser: nothing to rebind
    origin = origins[0].strip().rstrip("/").lower()
    if len(origins) == 1 and origin in _cors_origins():
        return None
    parts = urlsplit(origin)
    domain, _ = split_domain_port(parts.netloc)
    if len(origins) == 1 and parts.scheme in ("http", "https") and domain:
        if validate_host(domain, settings.ALLOWED_HOSTS):
            return None
    return "The Origin header names a site this gateway does not serve (CORS_ALLOWED_ORIGINS)."


def _cors_origins() -> frozenset[str]:
    return frozenset(origin.lower() for origin in settings.CORS_ALLOWED_ORIGINS)


def cors_origin(scope) -> str | None:
    """The request's Origin when it is one of CORS_ALLOWED_ORIGINS (its pages may read the answer)."""
    origins = _values(scope, b"origin")
    if len(origins) != 1 or origins[0].strip().rstrip("/").lower() not in _cors_origins():
        return None
    return origins[0].strip()


def cors_headers(origin: str) -> list[tuple[bytes, bytes]]:
    """The CORS headers of an answer to a page of `origin`."""
    return [
        (b"access-control-allow-origin", origin.encode("latin-1")),
        (b"access-control-expose-headers", ", ".join(settings.CORS_EXPOSE_HEADERS).encode()),
        (b"vary", b"Origin"),
        (b"cross-origin-resource-policy", b"cross-origin"),
    ]


def preflight_headers(scope, origin: str, methods: tuple[str, ...]) -> list[tuple[bytes, bytes]]:
    """The answer to a CORS preflight from `origin`: the methods of the endpoint, and the request headers
    asked for that are CORS_ALLOW_HEADERS or the protocol's own (`Mcp-*`)."""
    allowed = {name.lower() for name in settings.CORS_ALLOW_HEADERS}
    asked = [name.strip().lower() for name in first(scope, b"access-control-request-headers").split(",")]
    granted = [name for name in asked if name and (name in allowed or name.startswith("mcp-"))]
    return [
        (b"access-control-allow-origin", origin.encode("latin-1")),
        (b"access-control-allow-methods", ", ".join(methods).encode()),
        (b"access-control-allow-headers", ", ".join(granted).encode("latin-1")),
        (b"access-control-max-age", str(settings.CORS_PREFLIGHT_MAX_AGE).encode()),
        (b"vary", b"Origin"),
    ]


def protocol_disagreement(scope, batch: bool, messages: list[jsonrpc.Message]) -> str | None:
    """Why a POST's protocol headers disagree with its body, or None (also None without such headers)."""
    for name in ROUTING_HEADERS:
        if len(_values(scope, name)) > 1:
            return f"The {name.decode()} header is sent more than once."
    method = _values(scope, b"mcp-method")
    name = _values(scope, b"mcp-name")
    version = _values(scope, b"mcp-protocol-version")
    if not (method or name):
        return _version_disagreement(version, messages)
    if batch or len(messages) != 1:
        return "Mcp-Method and Mcp-Name describe one message; this body is a batch."
    message = messages[0]
    if method and method[0] != message.method:
        return "The Mcp-Method header does not match the body's method."
    if name and decode_header_value(name[0]) != message.target:
        return "The Mcp-Name header does not match the body's name or uri."
    return _version_disagreement(version, messages)


def _version_disagreement(version: list[str], messages: list[jsonrpc.Message]) -> str | None:
    if not version:
        return None
    for message in messages:
        stated = stated_version(message.raw)
        if stated is not None and stated != version[0]:
            return "The MCP-Protocol-Version header does not match the body's protocol version."
    return None


def stated_version(raw: dict):
    """The protocol version a 2026-07-28 message states in its `_meta`, or None."""
    params = raw.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get("io.modelcontextprotocol/protocolVersion") if isinstance(meta, dict) else None
