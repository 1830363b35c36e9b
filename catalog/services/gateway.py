"""Putting a published or mirrored server behind the gateway: its remote becomes the proxied target of a
gateway server (health checks, tool discovery, per-tool rules), and /v0.1 advertises the gateway's URL
as its remote from then on (catalog/listing_sql.py, catalog/responses.py)."""

import re

from django.core.exceptions import ValidationError
from django.db import transaction

from accounts.choices import AuditAction
from accounts.services import actor_user, audit_event_record
from catalog import policies
from catalog.choices import Status
from catalog.models import GatewayBinding, ServerVersion
from catalog.services.publishing import CatalogRefused
from servers.cache import LISTINGS
from servers.choices import Transport
from servers.models import Server
from servers.services import ServerConflict, server_create

PROXIED_TRANSPORTS = {"streamable-http": Transport.STREAMABLE_HTTP, "sse": Transport.SSE}


def gateway_path_for(name: str) -> str:
    """A gateway path for a server.json name: `com.acme/weather-api` → `/com-acme/weather-api`."""
    namespace, _, server = name.lower().partition("/")
    segments = [re.sub(r"[^a-z0-9_-]+", "-", part).strip("-") or "server" for part in (namespace, server)]
    return "/" + "/".join(segments)


def _proxied_remote(document: dict) -> dict | None:
    """The first remote the gateway can proxy: streamable HTTP or SSE at a plain URL (no `{variable}`
    left for a client to fill in)."""
    for remote in document.get("remotes") or []:
        if (
            isinstance(remote, dict)
            and remote.get("type") in PROXIED_TRANSPORTS
            and "{" not in remote.get("url", "")
        ):
            return remote
    return None


def version_put_behind_gateway(
    *, actor, name: str, path: str | None = None, headers: dict | None = None
) -> Server:
    """Make the latest version's remote a gateway server at `path` (derived from the name by default),
    enabled, with the outbound `headers` an administrator sets (credentials); administrators only."""
    if why := policies.gateway_binding_refusal(actor):
        raise CatalogRefused(403, why)
    latest = ServerVersion.objects.filter(name=name, is_latest=True).exclude(status=Status.DELETED).first()
    if latest is None:
        raise CatalogRefused(404, "Server not found")
    remote = _proxied_remote(latest.document)
    if remote is None:
        raise CatalogRefused(
            400,
            f"{name} has no remote the gateway can proxy (streamable-http or sse at a fixed URL): an entry "
            "with packages only is installed by its users, not proxied.",
        )
    path = path or gateway_path_for(name)
    with transaction.atomic():
        if GatewayBinding.objects.filter(name=name).exists():
            raise CatalogRefused(400, f"{name} is already behind the gateway.")
        try:
            server = server_create(
                actor=actor,
                path=path,
                is_enabled=True,
                name=(latest.document.get("title") or name)[:200],
                description=latest.description,
                proxy_pass_url=remote["url"],
                supported_transports=[PROXIED_TRANSPORTS[remote["type"]]],
                headers=headers or {},
                version=latest.version[:100],
            )
        except ValidationError as invalid:
            raise CatalogRefused(400, "; ".join(invalid.messages)) from None
        except ServerConflict as conflict:
            raise CatalogRefused(400, f"{conflict} Choose another path.") from None
        GatewayBinding.objects.create(name=name, server=server, created_by=actor_user(actor))
        audit_event_record(
            actor=actor,
            action=AuditAction.VERSIONS_GATEWAY,
            target=f"server:{name}",
            detail={"path": path, "remote": remote["url"]},
        )
        LISTINGS.bump()
    return server
