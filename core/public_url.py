"""The URL clients reach the registry at: GATEWAY_PUBLIC_URL when set, else the scheme and Host of the
request (behind a proxy of TRUSTED_PROXIES, the scheme it forwarded: runtime/web_server.py). One rule for
the pages, the APIs, the OAuth metadata and the gateway's own answers (an ASGI scope has no Django
request)."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings


def base_url(request) -> str:
    """The public base URL (no trailing slash) of a Django request."""
    return settings.GATEWAY_PUBLIC_URL or request.build_absolute_uri("/").rstrip("/")


def base_url_of_scope(scope) -> str:
    """The public base URL of an ASGI HTTP scope, as `base_url` gives it for the same request."""
    if settings.GATEWAY_PUBLIC_URL:
        return settings.GATEWAY_PUBLIC_URL
    headers = dict(scope.get("headers") or [])
    scheme = scope.get("scheme", "http")
    host = headers.get(b"host", b"").decode("latin-1").strip()
    if not host and scope.get("server"):
        address, port = scope["server"][:2]
        host = f"{address}:{port}"
    return f"{scheme}://{host}"


def origin_of(url: str) -> str:
    """The origin of a URL, `scheme://host:port` with the scheme's port when it names none, so two
    spellings of one origin compare equal: the one rule wherever origins are compared (where outbound
    credentials may go, the registry's own resources, an upstream's fair share)."""
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme, 0)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"
