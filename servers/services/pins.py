"""Pinned tools: what a server offers is compared with what an operator approved (servers/models.ToolPin),
by the definitions that reach a model (servers/pins.py).

- The first tool list discovery finds after a server is registered is pinned as it is: registering counts
  as approving what the server offers then (a list an operator gives is stored as given, never pinned:
  what the server answers is what reaches models).
- Afterwards a new tool or a changed definition, whether tool discovery found it or the gateway saw it in
  a live `tools/list`, is recorded as a pending ToolChange and held: left out of the stored tools (so of
  every list built from them) and refused by the gateway, until an operator approves it (it is pinned)
  or blocks it (servers/services/tool_blocks.py). A server marked `approve_tool_changes` has its changes
  pinned at once, audited all the same.
- A tool the server stops offering loses its pin (recorded as an approved removal): should it come back,
  it is new, and held.
Every change moves the TRUST epoch, so every gateway process applies it on its next request."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.choices import AuditAction
from accounts.services import actor_user, audit_event_record
from core.errors import ApiError, ErrorCode
from servers import scanning
from servers.cache import LISTINGS, TRUST
from servers.choices import ToolChangeKind, ToolChangeSeenIn, ToolChangeStatus
from servers.models import Server, ToolChange, ToolPin
from servers.pins import definition_of, digest_of, set_digest


def definitions_of(tools: list[dict]) -> dict[str, dict]:
    """name -> pinned definition of each tool of a list (first name wins): a discovered entry carries its
    whole `definition`; one without is read from its name, description and input schema."""
    found: dict[str, dict] = {}
    for tool in tools:
        definition = tool.get("definition") or definition_of(
            {
                "name": tool["name"],
                "description": tool.get("description") or None,
                "inputSchema": tool.get("input_schema"),
            }
        )
        found.setdefault(tool["name"], definition)
    return found


def tools_pin(server: Server, tools: list[dict], *, seen_in: str = ToolChangeSeenIn.DISCOVERY) -> set[str]:
    """Compare a server's tool list with its pins, pinning or holding what differs (see the module); the
    names that may be offered. Runs inside the caller's transaction."""
    definitions = definitions_of(tools)
    digests = {name: digest_of(definition) for name, definition in definitions.items()}
    now = timezone.now()
    if server.tools_pinned_at is None:
        return _pins_first(server, definitions, digests, seen_in, now)
    pins = {pin.name: pin for pin in server.tool_pins.all()}
    admitted, moved = set(), False
    for name, digest in digests.items():
        pin = pins.get(name)
        if pin is not None and pin.digest == digest:
            admitted.add(name)
            continue
        held, wrote = _held(server, name, pin, definitions[name], digest, seen_in, now, siblings=digests)
        if not held:
            admitted.add(name)
        moved = moved or wrote
    for name in pins.keys() - digests.keys():
        pins[name].delete()
        ToolChange.objects.create(
            server=server,
            name=name,
            kind=ToolChangeKind.REMOVED,
            old_definition=pins[name].definition,
            seen_in=seen_in,
            status=ToolChangeStatus.APPROVED,
            decided_at=now,
        )
        moved = True
    if moved:
        _set_digest_store(server, now)
        TRUST.bump()
    elif server.tool_scan_rules != scanning.rule_set_ref():
        _set_digest_store(server, now)  # the rules changed since the pinned set was scanned
    return admitted


def tool_seen(server: Server, tool: dict, *, seen_in: str = ToolChangeSeenIn.GATEWAY) -> bool:
    """A tool a live list showed whose definition is not the pinned one: held as a pending change (or
    pinned, for a server whose changes are approved automatically). Whether anything was recorded."""
    if server.tools_pinned_at is None or not isinstance(tool.get("name"), str):
        return False
    definition = definition_of(tool)
    digest, now = digest_of(definition), timezone.now()
    with transaction.atomic():
        pin = server.tool_pins.filter(name=tool["name"]).first()
        if pin is not None and pin.digest == digest:
            return False
        siblings = set(server.tool_pins.values_list("name", flat=True))
        _, wrote = _held(server, tool["name"], pin, definition, digest, seen_in, now, siblings=siblings)
        if wrote:
            _set_digest_store(server, now)
            TRUST.bump()
    return wrote


def tool_change_approve(*, actor, change: ToolChange, override: bool = False) -> None:
    """Pin what a pending change found; the tool comes back with the server's next discovery, queued now.
    A change whose scan holds it (servers/scanning.holds) is approved only with `override`."""
    from servers.services.checks import server_refresh

    if scanning.holds(change.findings) and not override:
        raise ApiError(
            409,
            ErrorCode.CONFLICT,
            f"Tool '{change.name}' has high-severity scan findings: approve it with an override.",
        )
    now = timezone.now()
    with transaction.atomic():
        _pin_store(
            change.server, change.name, change.new_definition, change.new_digest, change.findings, actor, now
        )
        _decide(change, ToolChangeStatus.APPROVED, actor, now)
        _set_digest_store(change.server, now)
        TRUST.bump()
        detail = {"tool": change.name, "kind": change.kind, "digest": change.new_digest}
        if scanning.worst(change.findings):
            detail |= {"findings": scanning.worst(change.findings), "override": override}
        audit_event_record(
            actor=actor,
            action=AuditAction.TOOL_CHANGE_APPROVE,
            target=f"server:{change.server.path}",
            detail=detail,
        )
        server_refresh(server=change.server)


def tool_change_block(*, actor, change: ToolChange, reason: str = "") -> None:
    """Block the tool a pending change is about (servers/services/tool_blocks.py), closing the change."""
    from servers.services.tool_blocks import tool_block

    with transaction.atomic():
        _decide(change, ToolChangeStatus.BLOCKED, actor, timezone.now())
        if not change.server.tool_blocks.filter(name=change.name).exists():
            tool_block(actor=actor, server=change.server, name=change.name, reason=reason or "change blocked")
        audit_event_record(
            actor=actor,
            action=AuditAction.TOOL_CHANGE_BLOCK,
            target=f"server:{change.server.path}",
            detail={"tool": change.name, "kind": change.kind, "digest": change.new_digest},
        )


# -- helpers --------------------------------------------------------------------------------------------


def _held(server, name, pin, definition, digest, seen_in, now, *, siblings) -> tuple[bool, bool]:
    """Record a new or changed definition, scanned: pinned at once for a trusted server when the scan does
    not hold it (not held), else pending (held). (held, whether anything was written): a change pending
    already is not recorded (nor scanned) twice."""
    if ToolChange.objects.filter(
        server=server, name=name, new_digest=digest, status=ToolChangeStatus.PENDING
    ).exists():
        return True, False
    kind = ToolChangeKind.CHANGED if pin is not None else ToolChangeKind.ADDED
    change = ToolChange(
        server=server,
        name=name,
        kind=kind,
        old_definition=pin.definition if pin is not None else None,
        new_definition=definition,
        new_digest=digest,
        seen_in=seen_in,
        findings=scanning.scan(definition, siblings),
    )
    if server.approve_tool_changes and not scanning.holds(change.findings):
        _pin_store(server, name, definition, digest, change.findings, None, now)
        change.status, change.decided_at = ToolChangeStatus.APPROVED, now
        change.save()
        audit_event_record(
            actor=None,
            action=AuditAction.TOOL_CHANGE_APPROVE,
            target=f"server:{server.path}",
            detail={"tool": name, "kind": kind, "digest": digest, "automatic": True},
        )
        return False, True
    try:
        with transaction.atomic():
            change.save()
    except IntegrityError:
        return True, False  # pending already: seen before
    return True, True


def _pins_first(server, definitions, digests, seen_in, now) -> set[str]:
    """Pin a server's first list as it is, but for the tools its scan holds: those are pending additions."""
    server.tool_pins.all().delete()
    pins, admitted = [], set()
    for name, digest in digests.items():
        findings = scanning.scan(definitions[name], digests)
        if scanning.holds(findings):
            _held(server, name, None, definitions[name], digest, seen_in, now, siblings=digests)
            continue
        admitted.add(name)
        pins.append(
            ToolPin(
                server=server,
                name=name,
                definition=definitions[name],
                digest=digest,
                findings=findings,
                approved_at=now,
            )
        )
    ToolPin.objects.bulk_create(pins)
    server.tools_pinned_at = now
    Server.objects.filter(pk=server.pk).update(tools_pinned_at=now)
    _set_digest_store(server, now, scanned=True)
    TRUST.bump()
    return admitted


def _pins_rescan(server) -> None:
    """Scan the pinned definitions again with the current rules (findings only: what was approved stays)."""
    pins = list(server.tool_pins.all())
    names = {pin.name for pin in pins}
    for pin in pins:
        pin.findings = scanning.scan(pin.definition, names)
    ToolPin.objects.bulk_update(pins, ["findings"])


def _pin_store(server, name, definition, digest, findings, actor, now) -> None:
    ToolPin.objects.update_or_create(
        server=server,
        name=name,
        defaults={
            "definition": definition,
            "digest": digest,
            "findings": findings,
            "approved_by": actor_user(actor),
            "approved_at": now,
        },
    )


def _set_digest_store(server, now, *, scanned: bool = False) -> None:
    """The pinned set's digest and its scan (the /v0.1 receipt: servers/v01_responses.py), the pins scanned
    again first unless they were just (`scanned`) when the rules changed since they were."""
    if not scanned and server.tool_scan_rules != scanning.rule_set_ref():
        _pins_rescan(server)
    pinned = list(server.tool_pins.values_list("name", "digest", "findings"))
    fields = {
        "tool_set_digest": set_digest({name: digest for name, digest, _ in pinned}),
        "tools_scanned_at": now,
        "tool_scan_verdict": scanning.verdict(findings for _, _, findings in pinned),
        "tool_scan_rules": scanning.rule_set_ref(),
        "tool_scanner_version": scanning.scanner_version(),
    }
    for field, value in fields.items():
        setattr(server, field, value)
    Server.objects.filter(pk=server.pk).update(**fields)
    LISTINGS.bump()


def _decide(change: ToolChange, status: str, actor, now) -> None:
    change.status, change.decided_by, change.decided_at = status, actor_user(actor), now
    change.save(update_fields=["status", "decided_by", "decided_at"])
