"""The nginx configuration `manage.py nginx_config` writes: upstream groups for the registry and for
every registered server's origin, and a server block that sends MCP requests to the gateway whole and
carries the ones it hands back (gateway/handoff.py) to the servers. Enabling, disabling and
permissions need no regeneration (the registry decides every request); a new server origin does."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings
from django.template.loader import render_to_string

from gateway import handoff
from servers.selectors import server_origins

DEFAULT_CA_FILE = "/etc/ssl/certs/ca-certificates.crt"


@dataclass(frozen=True)
class Upstream:
    name: str
    address: str  # host:port, as nginx's `server` directive takes it
    origin: str
    paths: list[str]


def _address(origin: str) -> str:
    parts = urlsplit(origin)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    host = parts.hostname or ""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def upstreams() -> list[Upstream]:
    return [
        Upstream(
            name=handoff.upstream_name(origin),
            address=_address(origin),
            origin=origin,
            paths=[server.path for server in servers],
        )
        for origin, servers in sorted(server_origins().items())
    ]


def render(
    *, registry: list[str], listen: list[str], server_name: str, ca_file: str = DEFAULT_CA_FILE
) -> str:
    """The configuration, for the http context (`include` it from nginx.conf's `http { }`)."""
    groups = upstreams()
    return render_to_string(
        "gateway/nginx.conf",
        {
            "registry": registry,
            "listen": listen,
            "server_name": server_name,
            "upstreams": groups,
            "server_count": sum(len(group.paths) for group in groups),
            "handoff_offer": handoff.offer(group.name for group in groups),
            "tls_upstreams": any(group.origin.startswith("https:") for group in groups),
            "ca_file": ca_file,
            "max_body_bytes": settings.MAX_REQUEST_BODY_BYTES,
            "connect_timeout": max(1, round(settings.GATEWAY_CONNECT_TIMEOUT_SECONDS)),
            "timeout": max(1, round(settings.GATEWAY_TIMEOUT_SECONDS)),
            "named_location": handoff.NAMED_LOCATION,
        },
    )
