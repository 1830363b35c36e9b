"""Blocking and unblocking one tool of a server (servers/models.ToolBlock): a blocked tool leaves the
server's stored tools at once, so every list built from them (dashboard, tools API, /v0.1 counts, search,
discovery documents, virtual servers) drops it, and the gateway refuses it to every caller through the
one rule (servers/trust.py). Who may ask is the caller's to check: the policy of changing the server."""

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from accounts.choices import AuditAction
from accounts.services import actor_user, audit_event_record
from servers.cache import TRUST
from servers.live.publish import health_changed
from servers.models import Server, ToolBlock
from servers.services.checks import server_refresh

NAME_MAX_LENGTH = ToolBlock._meta.get_field("name").max_length
REASON_MAX_LENGTH = ToolBlock._meta.get_field("reason").max_length


def tool_block(*, actor, server: Server, name: str, reason: str = "") -> ToolBlock:
    """Block `name` on `server` (a name the server does not list yet may be blocked too: it stays
    hidden when it appears). ValidationError for an empty or too long name, or one blocked already."""
    name, reason = (name or "").strip(), (reason or "").strip()
    if not name or len(name) > NAME_MAX_LENGTH:
        raise ValidationError({"name": f"A tool name of 1 to {NAME_MAX_LENGTH} characters."})
    if len(reason) > REASON_MAX_LENGTH:
        raise ValidationError({"reason": f"At most {REASON_MAX_LENGTH} characters."})
    try:
        with transaction.atomic():
            block = ToolBlock.objects.create(
                server=server, name=name, reason=reason, blocked_by=actor_user(actor)
            )
            removed, _ = server.tools.filter(name=name).delete()
            if removed:
                server.num_tools = server.tools.count()
                server.save(update_fields=["num_tools", "updated_at"])
                health_changed(server)
            TRUST.bump()
            audit_event_record(
                actor=actor,
                action=AuditAction.TOOL_BLOCK,
                target=f"server:{server.path}",
                detail={"tool": name, "reason": reason},
            )
    except IntegrityError:
        raise ValidationError({"name": f"'{name}' is blocked on {server.path} already."}) from None
    return block


def tool_unblock(*, actor, block: ToolBlock) -> None:
    """Lift a block; the tool comes back with the server's next tool discovery, queued now."""
    server, name = block.server, block.name
    with transaction.atomic():
        block.delete()
        TRUST.bump()
        audit_event_record(
            actor=actor,
            action=AuditAction.TOOL_UNBLOCK,
            target=f"server:{server.path}",
            detail={"tool": name},
        )
        server_refresh(server=server)
