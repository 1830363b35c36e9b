"""Reads of upstream credentials: a user's connections page, and the console's list (never a secret)."""

from dataclasses import dataclass

from connections.choices import Purpose
from connections.models import UpstreamCredential
from connections.sealed import fits
from servers.choices import USER_CREDENTIAL_MODES
from servers.models import Server


@dataclass(frozen=True)
class ConnectionRow:
    server: Server
    credential: UpstreamCredential | None
    usable: bool  # connected for the server as it is now (its mode and origin unchanged)


def connections_of(principal) -> list[ConnectionRow]:
    """Every server `principal` may use that needs their own credential, with their connection if any."""
    servers = [
        server
        for server in Server.objects.filter(upstream_auth__in=list(USER_CREDENTIAL_MODES)).order_by("path")
        if principal.allows_mcp(server.path, "initialize")
    ]
    mine = {
        credential.server_id: credential
        for credential in UpstreamCredential.objects.filter(
            user=principal.user, purpose=Purpose.USER, server__in=servers
        )
    }
    return [
        ConnectionRow(server, mine.get(server.pk), _usable(mine.get(server.pk), server)) for server in servers
    ]


def connection_of(principal, server: Server) -> UpstreamCredential | None:
    return UpstreamCredential.objects.filter(server=server, user=principal.user, purpose=Purpose.USER).first()


def _usable(credential, server) -> bool:
    return credential is not None and fits(credential, server)
