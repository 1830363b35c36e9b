"""Which resource (RFC 8707) a token is for: a server behind the gateway (`<origin>/<server path>/mcp`,
or its `/sse` endpoint), an A2A agent behind it (`<origin>/<agent path>/a2a`) or the registry's own APIs
(`<origin>`). One rule, used when a client asks for a
token (oauth/views/authorization.py), when its metadata is published (RFC 9728) and when the token is
presented (the gateway and the APIs compare the principal's audience with where it is used)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from accounts.principal import REGISTRY
from core.public_url import base_url, origin_of
from gateway.paths import PathRefused, agent_path, gateway_path

__all__ = [
    "REGISTRY",
    "Resource",
    "ResourceRefused",
    "audience_of_path",
    "audience_of_resource",
    "our_origins",
    "resource_of",
]


class ResourceRefused(ValueError):
    """A resource indicator that names nothing this registry serves (OAuth error `invalid_target`)."""


@dataclass(frozen=True)
class Resource:
    url: str
    audience: str  # the server path (`/weather`), or REGISTRY

    @property
    def server_path(self) -> str | None:
        return None if self.audience == REGISTRY else self.audience

    @property
    def oauth_scope(self) -> str:
        """The OAuth scope a token needs where this resource is used."""
        return "registry" if self.audience == REGISTRY else "mcp"


def our_origins(request) -> set[str]:
    """The origins a resource of this registry may name: the public one, and the one of the request."""
    return {origin_of(base_url(request)), origin_of(request.build_absolute_uri("/"))}


def audience_of_path(path: str) -> str | None:
    """The audience a request path is served for: the server (or agent) path of a gateway path, else
    None."""
    try:
        target = gateway_path(path.encode()) or agent_path(path.encode())
    except PathRefused:
        return None
    return target.candidates[0] if target is not None else None


def resource_of(url: str, *, origins: set[str]) -> Resource:
    """The resource `url` names, if it is one of ours (its origin among `origins`); ResourceRefused else."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.fragment or parts.query:
        raise ResourceRefused("A resource is an absolute http(s) URL without query or fragment.")
    if origin_of(url.strip()) not in origins:
        raise ResourceRefused(f"{parts.scheme}://{parts.netloc} is not served by this registry.")
    if parts.path in ("", "/"):
        return Resource(url=url.strip(), audience=REGISTRY)
    try:
        target = gateway_path(parts.path.encode())
        agent = agent_path(parts.path.encode()) if target is None else None
    except PathRefused as refused:
        raise ResourceRefused(str(refused)) from None
    if agent is not None and not agent.rest:
        return Resource(url=url.strip(), audience=agent.candidates[0])
    if target is None or target.endpoint == "messages":
        raise ResourceRefused(
            "A resource is the registry's URL, a server's gateway URL (…/mcp) or an agent's (…/a2a)."
        )
    return Resource(url=url.strip(), audience=target.candidates[0])


def audience_of_resource(url: str) -> str | None:
    """The audience of a resource URL already accepted when its token was issued."""
    path = urlsplit(url).path
    return REGISTRY if path in ("", "/") else audience_of_path(path)
