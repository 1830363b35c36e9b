"""Pinned tools and prompts: what a server offers is compared with what an operator approved
(servers/models.ToolPin), by the definitions that reach a model (servers/pins.py). Tools and prompts
follow the same rules, each list on its own (`subject`); what is said of tools below holds for prompts.

- The first tool list discovery finds after a server is registered, or enabled again, is pinned as it is:
  registering and enabling count as approving what the server offers then, but for a definition whose
  scan holds it (servers/scanning.py). A list an operator gives is stored as given, never pinned: what
  the server answers is what reaches models.
- Afterwards a new tool or a changed definition, whether tool discovery found it or the gateway saw it in
  a live `tools/list`, is recorded as a pending ToolChange and held: left out of the stored tools (so of
  every list built from them) and refused by the gateway, until an operator approves it (it is pinned)
  or blocks it (servers/services/tool_blocks.py). A server marked `approve_tool_changes` has its changes
  pinned at once, audited all the same.
- A tool the server stops offering loses its pin (recorded as an approved removal): should it come back,
  it is new, and held.
Every change moves the TRUST epoch, so every gateway process applies it on its next request."""

from __future__ import annotations

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.cache import PRINCIPALS
from accounts.choices import AuditAction
from accounts.services import actor_user, audit_event_record
from core import attestations
from core.errors import ApiError, ErrorCode
from core.timestamps import rfc3339
from servers import scanning
from servers.cache import LISTINGS, TRUST
from servers.choices import PinSubject, ToolChangeKind, ToolChangeSeenIn, ToolChangeStatus
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


TOOL, PROMPT = PinSubject.TOOL, PinSubject.PROMPT
PINNED_AT = {TOOL: "tools_pinned_at", PROMPT: "prompts_pinned_at"}  # the server's field: pinned since


def tools_pin(server: Server, tools: list[dict], *, seen_in: str = ToolChangeSeenIn.DISCOVERY) -> set[str]:
    """Compare a server's tool list with its pins, pinning or holding what differs (see the module); the
    names that may be offered. Runs inside the caller's transaction."""
    return _list_pin(server, TOOL, definitions_of(tools), seen_in)


def prompts_pin(
    server: Server, prompts: list[dict], *, seen_in: str = ToolChangeSeenIn.DISCOVERY
) -> set[str]:
    """tools_pin for a server's prompt list (`prompts/list` entries)."""
    definitions: dict[str, dict] = {}
    for prompt in prompts:
        definitions.setdefault(prompt["name"], definition_of(prompt, PROMPT))
    return _list_pin(server, PROMPT, definitions, seen_in)


def _list_pin(server: Server, subject: str, definitions: dict[str, dict], seen_in: str) -> set[str]:
    digests = {name: digest_of(definition) for name, definition in definitions.items()}
    now = timezone.now()
    if getattr(server, PINNED_AT[subject]) is None or server.repin_on_discovery:
        return _pins_first(server, subject, definitions, digests, seen_in, now)
    pins = {pin.name: pin for pin in server.tool_pins.filter(subject=subject)}
    admitted, moved = set(), False
    for name, digest in digests.items():
        pin = pins.get(name)
        if pin is not None and pin.digest == digest:
            admitted.add(name)
            continue
        held, wrote = _held(
            server, subject, name, pin, definitions[name], digest, seen_in, now, siblings=digests
        )
        if not held:
            admitted.add(name)
        moved = moved or wrote
    for name in pins.keys() - digests.keys():
        pins[name].delete()
        ToolChange.objects.create(
            server=server,
            subject=subject,
            name=name,
            kind=ToolChangeKind.REMOVED,
            old_definition=pins[name].definition,
            seen_in=seen_in,
            status=ToolChangeStatus.APPROVED,
            decided_at=now,
        )
        moved = True
    if moved:
        _pins_moved(server, subject, now)
    elif subject == TOOL and server.tool_scan_rules != scanning.rule_set_ref():
        _set_digest_store(server, now)  # the rules changed since the pinned set was scanned
    return admitted


def pin_seen(
    server: Server, item: dict, *, subject: str = TOOL, seen_in: str = ToolChangeSeenIn.GATEWAY
) -> bool:
    """A tool (or prompt) a live list showed whose definition is not the pinned one: held as a pending
    change (or pinned, for a server whose changes are approved automatically). Whether anything was
    recorded."""
    if getattr(server, PINNED_AT[subject]) is None or not isinstance(item.get("name"), str):
        return False
    definition = definition_of(item, subject)
    digest, now = digest_of(definition), timezone.now()
    with transaction.atomic():
        pins = server.tool_pins.filter(subject=subject)
        pin = pins.filter(name=item["name"]).first()
        if pin is not None and pin.digest == digest:
            return False
        siblings = set(pins.values_list("name", flat=True))
        _, wrote = _held(
            server, subject, item["name"], pin, definition, digest, seen_in, now, siblings=siblings
        )
        if wrote:
            _pins_moved(server, subject, now)
    return wrote


def tool_change_approve(*, actor, change: ToolChange, override: bool = False) -> None:
    """Pin what a pending change found; the tool comes back with the server's next discovery, queued now.
    A change whose scan holds it (servers/scanning.holds) is approved only with `override`."""
    from servers.services.checks import server_refresh

    if scanning.holds(change.findings) and not override:
        raise ApiError(
            409,
            ErrorCode.CONFLICT,
            f"{change.get_subject_display()} '{change.name}' has high-severity scan findings: approve it "
            "with an override.",
        )
    now = timezone.now()
    with transaction.atomic():
        _pin_store(change.server, change.subject, change, change.findings, actor, now)
        _decide(change, ToolChangeStatus.APPROVED, actor, now)
        _pins_moved(change.server, change.subject, now)
        detail = _detail(change)
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
    """Block the tool a pending change is about (servers/services/tool_blocks.py), closing the change. A
    prompt's block takes its pin away: refused and left out of lists until a later change of it is
    approved. A blocked definition is not recorded again (`_held`)."""
    from servers.services.tool_blocks import tool_block

    with transaction.atomic():
        _decide(change, ToolChangeStatus.BLOCKED, actor, timezone.now())
        if change.subject == PROMPT:
            change.server.tool_pins.filter(subject=PROMPT, name=change.name).delete()
            TRUST.bump()
        elif not change.server.tool_blocks.filter(name=change.name).exists():
            tool_block(actor=actor, server=change.server, name=change.name, reason=reason or "change blocked")
        audit_event_record(
            actor=actor,
            action=AuditAction.TOOL_CHANGE_BLOCK,
            target=f"server:{change.server.path}",
            detail=_detail(change),
        )


# -- helpers --------------------------------------------------------------------------------------------


def _detail(change: ToolChange) -> dict:
    """What the audit says of a decided change; a prompt's is marked as one."""
    detail = {"tool": change.name, "kind": change.kind, "digest": change.new_digest}
    return detail if change.subject == TOOL else {**detail, "subject": change.subject}


def _held(server, subject, name, pin, definition, digest, seen_in, now, *, siblings) -> tuple[bool, bool]:
    """Record a new or changed definition, scanned: pinned at once for a trusted server when the scan does
    not hold it (not held), else pending (held). (held, whether anything was written): a change pending,
    or blocked, already is not recorded (nor scanned) again."""
    if ToolChange.objects.filter(
        server=server,
        subject=subject,
        name=name,
        new_digest=digest,
        status__in=(ToolChangeStatus.PENDING, ToolChangeStatus.BLOCKED),
    ).exists():
        return True, False
    kind = ToolChangeKind.CHANGED if pin is not None else ToolChangeKind.ADDED
    change = ToolChange(
        server=server,
        subject=subject,
        name=name,
        kind=kind,
        old_definition=pin.definition if pin is not None else None,
        new_definition=definition,
        new_digest=digest,
        seen_in=seen_in,
        findings=scanning.scan(definition, siblings),
    )
    if server.approve_tool_changes and not scanning.holds(change.findings):
        _pin_store(server, subject, change, change.findings, None, now)
        change.status, change.decided_at = ToolChangeStatus.APPROVED, now
        change.save()
        audit_event_record(
            actor=None,
            action=AuditAction.TOOL_CHANGE_APPROVE,
            target=f"server:{server.path}",
            detail={**_detail(change), "automatic": True},
        )
        return False, True
    try:
        with transaction.atomic():
            change.save()
    except IntegrityError:
        return True, False  # pending already: seen before
    return True, True


def _pins_first(server, subject, definitions, digests, seen_in, now) -> set[str]:
    """Pin a server's first list (or its list once enabled again) as it is, but for the tools its scan
    holds: those are (or stay) pending; every other pending change of the list is approved by it."""
    findings_of = {name: scanning.scan(definitions[name], digests) for name in digests}
    held = {name for name, findings in findings_of.items() if scanning.holds(findings)}
    server.tool_pins.filter(subject=subject).delete()
    server.tool_changes.filter(subject=subject, status=ToolChangeStatus.PENDING).exclude(
        name__in=held
    ).update(status=ToolChangeStatus.APPROVED, decided_at=now)
    pins, admitted = [], set()
    for name, digest in digests.items():
        findings = findings_of[name]
        if name in held:
            _held(server, subject, name, None, definitions[name], digest, seen_in, now, siblings=digests)
            continue
        admitted.add(name)
        pins.append(
            ToolPin(
                server=server,
                subject=subject,
                name=name,
                definition=definitions[name],
                digest=digest,
                findings=findings,
                approved_at=now,
            )
        )
    ToolPin.objects.bulk_create(pins)
    setattr(server, PINNED_AT[subject], now)
    Server.objects.filter(pk=server.pk).update(**{PINNED_AT[subject]: now})
    if subject == TOOL:
        _set_digest_store(server, now, scanned=True)
    TRUST.bump()
    return admitted


def _pins_rescan(server) -> None:
    """Scan the pinned definitions again with the current rules (findings only: what was approved stays)."""
    pins = list(server.tool_pins.filter(subject=TOOL))
    names = {pin.name for pin in pins}
    for pin in pins:
        pin.findings = scanning.scan(pin.definition, names)
    ToolPin.objects.bulk_update(pins, ["findings"])


def _pin_store(server, subject, change: ToolChange, findings, actor, now) -> None:
    ToolPin.objects.update_or_create(
        server=server,
        subject=subject,
        name=change.name,
        defaults={
            "definition": change.new_definition,
            "digest": change.new_digest,
            "findings": findings,
            "approved_by": actor_user(actor),
            "approved_at": now,
        },
    )


def _pins_moved(server, subject, now) -> None:
    """After pins or pending changes moved: the tool set's digest and scan, and every process's trust."""
    if subject == TOOL:
        _set_digest_store(server, now)
    TRUST.bump()


def _set_digest_store(server, now, *, scanned: bool = False) -> None:
    """The pinned set's digest and its scan (the /v0.1 receipt: servers/v01_responses.py), the pins scanned
    again first unless they were just (`scanned`) when the rules changed since they were."""
    if not scanned and server.tool_scan_rules != scanning.rule_set_ref():
        _pins_rescan(server)
    pinned = list(server.tool_pins.filter(subject=TOOL).values_list("name", "digest", "findings"))
    fields = {
        "tool_set_digest": set_digest({name: digest for name, digest, _ in pinned}),
        "tools_scanned_at": now,
        "tool_scan_verdict": scanning.verdict(findings for _, _, findings in pinned),
        "tool_scan_rules": scanning.rule_set_ref(),
        "tool_scanner_version": scanning.scanner_version(),
    }
    fields["tool_attestation"] = attestations.sign(
        {
            "sub": f"sha256:{fields['tool_set_digest']}",
            "digests": {
                "set": f"sha256:{fields['tool_set_digest']}",
                "tools": {name: f"sha256:{digest}" for name, digest, _ in sorted(pinned)},
            },
            "scope": list(scanning.SCAN_SCOPE),
            "verdict": fields["tool_scan_verdict"],
            "scanned_at": rfc3339(now),
            "scanner": scanning.SCANNER_DISTRIBUTION,
            "scanner_version": fields["tool_scanner_version"],
            "policy": {"high_holds": settings.TOOL_SCAN_HIGH_HOLDS, "rules": fields["tool_scan_rules"]},
        }
    )
    moved = fields["tool_set_digest"] != server.tool_set_digest
    for field, value in fields.items():
        setattr(server, field, value)
    Server.objects.filter(pk=server.pk).update(**fields)
    LISTINGS.bump()
    if moved:  # tokens an identity provider granted for the set before are judged again (oauth/principals.py)
        PRINCIPALS.bump()


def _decide(change: ToolChange, status: str, actor, now) -> None:
    change.status, change.decided_by, change.decided_at = status, actor_user(actor), now
    change.save(update_fields=["status", "decided_by", "decided_at"])
