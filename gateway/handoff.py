"""Handing a checked request back to nginx (`X-Accel-Redirect`), when nginx stands in front.

nginx's `auth_request` cannot judge an MCP call: its subrequest always carries an empty body, and the
call (`tools/call` of which tool) is in the body. So the configuration `manage.py nginx_config` writes
sends MCP requests to the gateway itself, whole. The gateway authenticates and authorizes them exactly
as it does without nginx, and then, instead of carrying an allowed request to the server itself, answers
`X-Accel-Redirect: @mcp_upstream` with where the request goes: nginx re-sends the original request (its
method and body) to the server and streams the answer to the client without the registry.

nginx offers the handoff in the `X-Gateway-Handoff` header: the upstream groups its configuration
defines, signed with SECRET_KEY at generation, so a client cannot ask for a handoff and a server added
since the configuration was written is served by the gateway until it is regenerated. A request the
gateway must change on the way is never handed off: tool lists (filtered to the caller's tools), denied
calls (answered here), calls that may create an MCP task and task requests (the gateway names each task
for its caller: gateway/tasks.py), servers with outbound headers (kept out of nginx's files), the SSE
transport, GET streams (filtered like every stream) and `initialize` (its session is bound to the
caller).
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import urlsplit

from django.conf import settings

from accounts.principal import Principal
from servers.choices import UpstreamAuth
from servers.models import Server

HEADER = b"x-gateway-handoff"
NAMED_LOCATION = "@mcp_upstream"


def upstream_name(url: str) -> str:
    """The nginx upstream group of a server URL's origin: one per scheme, host and port."""
    parts = urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc}".lower()
    return "mcp_" + hashlib.sha256(origin.encode()).hexdigest()[:12]


def _signature(names: list[str]) -> str:
    message = "gateway-handoff:" + " ".join(names)
    return hmac.new(settings.SECRET_KEY.encode(), message.encode(), hashlib.sha256).hexdigest()[:32]


def offer(names) -> str:
    """The X-Gateway-Handoff value a configuration defining upstream groups `names` sends."""
    ordered = sorted(set(names))
    return " ".join([_signature(ordered), *ordered])


def offered(value: str) -> frozenset[str]:
    """The upstream groups an X-Gateway-Handoff value offers; none unless its signature holds."""
    signature, *names = value.split() or [""]
    if not names or not hmac.compare_digest(signature, _signature(names)):
        return frozenset()
    return frozenset(names)


def identity_headers(principal: Principal, server_name: str, tool: str | None) -> dict[str, str]:
    """Who is calling, for the server behind the proxy (and for `/validate`'s answer)."""
    return {
        "X-User": principal.username,
        "X-Username": principal.username,
        "X-Client-Id": principal.client_id or "",
        "X-Scopes": " ".join(principal.scopes),
        "X-Auth-Method": principal.auth_method or "",
        "X-Server-Name": server_name,
        "X-Tool-Name": tool or "",
    }


def can_hand_off(server: Server, offered_names: frozenset[str], endpoint: str, checked, method: str) -> bool:
    """Whether nginx may carry this request: it goes to the server exactly as the client sent it, and
    its answer needs nothing from the gateway. GET streams stay (every stream is filtered: a resumption
    may replay a tool list), and so does `initialize` (its answer's session is bound to the caller)."""
    if not offered_names or endpoint != "mcp" or server.headers or server.upstream_auth != UpstreamAuth.NONE:
        return False
    if upstream_name(server.proxy_pass_url) not in offered_names:
        return False
    if checked is None:
        return method == "DELETE"  # the end of a session
    return checked.untouched and not checked.rewrites and not checked.opens_session


def redirect_headers(server: Server, query: bytes, principal: Principal, tool: str | None) -> list:
    """The answer that hands the request to nginx's @mcp_upstream location."""
    parts = urlsplit(server.proxy_pass_url)
    uri = parts.path or "/"
    if parts.query or query:
        uri += "?" + "&".join(filter(None, [parts.query, query.decode("latin-1")]))
    headers = {
        "X-Accel-Redirect": NAMED_LOCATION,
        "X-Mcp-Upstream": upstream_name(server.proxy_pass_url),
        "X-Mcp-Scheme": parts.scheme,
        "X-Mcp-Host": parts.netloc,
        "X-Mcp-Sni": parts.hostname or "",
        "X-Mcp-Uri": uri,
        "Content-Length": "0",
        **identity_headers(principal, server.path.lstrip("/"), tool),
    }
    return [(name.lower().encode(), value.encode()) for name, value in headers.items()]
