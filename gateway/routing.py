"""Who is calling and which server a gateway request reaches: the Principal (the same as on every
surface: registry or identity-provider bearer token, or a session) and the longest registered server
path, from the per-process caches when both hold them (no database), else from the database in a thread.
The caller comes first, so an anonymous client cannot tell registered paths from unknown ones."""

from __future__ import annotations

from dataclasses import dataclass
from http.cookies import SimpleCookie

from django.conf import settings
from django.urls import Resolver404, resolve
from rest_framework import exceptions

from accounts.authentication import (
    bearer_of,
    cached_principal,
    principal_from_bearer,
    principal_from_session_key,
)
from accounts.principal import Principal
from accounts.view_as import READ_ONLY_MESSAGE
from core.epochs import MISSING
from core.errors import ErrorCode
from gateway.epochs import Epochs
from servers.models import Server
from servers.selectors import server_for_gateway, server_for_gateway_cached
from servers.trust import tool_trusts, tool_trusts_cached
from virtual_servers.selectors import VirtualTarget, virtual_for_gateway, virtual_for_gateway_cached

METADATA_PATH = "/.well-known/oauth-protected-resource"


@dataclass(frozen=True)
class Route:
    """Where a gateway request goes: a server, or (its path held by no server) a virtual server."""

    server: Server | None
    principal: Principal
    virtual: VirtualTarget | None = None

    @property
    def path(self) -> str:
        return self.virtual.path if self.virtual is not None else self.server.path


class Refusal(Exception):
    """A request the gateway answers itself, in the one error format."""

    def __init__(self, status: int, code: ErrorCode | str, detail: str, headers: dict | None = None):
        super().__init__(detail)
        self.status, self.code, self.detail, self.headers = status, code, detail, headers or {}


class NotOurs(Exception):
    """A path that ends like a gateway path but names no registered server, while Django serves it (the
    edit page of a server whose path is `/mcp`, say)."""


def _route(server: Server | None, principal: Principal, candidates: tuple[str, ...], virtual=None) -> Route:
    if server is None and virtual is not None and virtual.is_enabled:
        return Route(server=None, principal=principal, virtual=virtual)
    if server is None or not server.is_enabled:
        raise Refusal(404, ErrorCode.NOT_FOUND, f"No enabled MCP server at {candidates[0]}.")
    return Route(server=server, principal=principal)


def cached_route(token: str | None, candidates: tuple[str, ...], epochs: Epochs) -> Route | None:
    """The route from the per-process caches alone (no database), or None when any misses, under the
    request's epochs (gateway/epochs.py)."""
    if token is None:
        return None
    server = server_for_gateway_cached(candidates, epochs.routes)
    if server is MISSING:
        return None
    virtual = None
    if server is None:
        virtual = virtual_for_gateway_cached(candidates, epochs.virtuals)
        if virtual is MISSING or virtual is None:
            return None
    principal, trusts = (
        cached_principal(token, epochs.principals),
        tool_trusts_cached(_paths(server, virtual), epochs.trust),
    )
    if principal is None or trusts is MISSING:
        return None
    return _route(server, principal.with_trust(trusts), candidates, virtual)


def _paths(server: Server | None, virtual: VirtualTarget | None) -> list[str]:
    """The servers whose tools a request may reach: the route's, or the virtual server's members'."""
    if server is not None:
        return [server.path]
    return [member.server.path for member in virtual.members] if virtual is not None else []


def resolve_route(
    path: str, candidates: tuple[str, ...], authorization: str, cookie: str, epochs: Epochs
) -> Route:
    """The caller, then the server (longest registered prefix, enabled) or else the virtual server;
    Refusal otherwise. The caller comes first, so an anonymous client cannot tell registered paths from
    unknown ones."""
    server = server_for_gateway(candidates, epochs.routes)
    virtual = virtual_for_gateway(candidates, epochs.virtuals) if server is None else None
    if server is None and virtual is None:
        try:
            resolve(path)
        except Resolver404:
            pass
        else:
            raise NotOurs
    principal = caller(authorization, cookie, epochs.principals).with_trust(
        tool_trusts(_paths(server, virtual), epochs.trust)
    )
    return _route(server, principal, candidates, virtual)


def caller(authorization: str, cookie: str, epoch) -> Principal:
    """Who calls through the gateway: the bearer token's Principal, else the session cookie's; Refusal
    when neither is good (a session viewing as another user is read only: it calls nothing)."""
    if token := bearer_of(authorization):
        try:
            return principal_from_bearer(token, epoch=epoch)
        except exceptions.AuthenticationFailed as failed:
            raise Refusal(401, failed.get_codes(), str(failed.detail)) from None
    morsel = SimpleCookie(cookie).get(settings.SESSION_COOKIE_NAME) if cookie else None
    principal = principal_from_session_key(morsel.value if morsel else None)
    if principal is None:
        raise Refusal(401, ErrorCode.NOT_AUTHENTICATED, "Authentication credentials were not provided.")
    if principal.viewed_by:  # calling a tool acts as the user: viewing as them is read only
        raise Refusal(403, ErrorCode.VIEWING_AS, READ_ONLY_MESSAGE)
    return principal


def challenge(base_url: str, audience: str, endpoint: str, code: str) -> str:
    """The `WWW-Authenticate` of a 401 or 403 (MCP authorization, RFC 9728 section 5.1): where the
    resource's metadata is, the scope a token needs, and what was wrong with the one presented."""
    resource = f"{audience}/{'sse' if endpoint == 'messages' else endpoint}"
    value = f'Bearer resource_metadata="{base_url}{METADATA_PATH}{resource}", scope="mcp"'
    if code == ErrorCode.INSUFFICIENT_SCOPE:
        return f'{value}, error="insufficient_scope"'
    if code != ErrorCode.NOT_AUTHENTICATED:
        return f'{value}, error="invalid_token"'
    return value
