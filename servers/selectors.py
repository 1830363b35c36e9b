"""Reads for servers."""

from servers.models import Server


def server_is_routable(path: str) -> bool:
    """Whether the gateway should route traffic to `path` at all: it exists and is enabled."""
    return Server.objects.filter(path=path, is_enabled=True).exists()
