"""Adding, changing and removing the upstream registries this one mirrors (admin and `manage.py mirror`)."""

from urllib.parse import urlsplit

from django.db import transaction
from django.utils.text import slugify

from accounts.choices import AuditAction
from accounts.services import audit_event_record
from catalog.models import Upstream
from core.services import apply_changes, require_editable
from servers.cache import LISTINGS

UPSTREAM_EDITABLE_FIELDS = ("url", "auth_header", "include", "exclude", "interval_minutes", "is_enabled")


def upstream_default_name(url: str) -> str:
    """A name for an upstream known by its URL: its host (and port), as a slug."""
    parts = urlsplit(url)
    return slugify(parts.netloc.replace(":", "-").replace(".", "-"))[:100] or "upstream"


def _detail(upstream: Upstream, fields) -> dict:
    # The auth header is a credential: the audit says whether it changed, never what it is.
    return {key: ("(set)" if key == "auth_header" else getattr(upstream, key)) for key in fields}


def upstream_save(*, actor, name: str, **fields) -> tuple[Upstream, bool]:
    """Create the upstream `name`, or change the fields given; returns (upstream, created). A crawl
    under way starts again when the URL or the name filters change."""
    require_editable(fields, UPSTREAM_EDITABLE_FIELDS)
    with transaction.atomic():
        upstream = Upstream.objects.select_for_update().filter(name=name).first()
        if upstream is None:
            upstream = Upstream(name=name, **fields)
            upstream.full_clean()
            upstream.save()
            audit_event_record(
                actor=actor,
                action=AuditAction.UPSTREAM_CREATE,
                target=f"upstream:{name}",
                detail=_detail(upstream, fields),
            )
            return upstream, True
        changed = apply_changes(upstream, fields)
        if not changed:
            return upstream, False
        if {"url", "include", "exclude"} & set(changed):
            upstream.cursor, upstream.updated_watermark = "", None
            changed += ["cursor", "updated_watermark"]
        upstream.full_clean()
        upstream.save(update_fields=changed)
        audit_event_record(
            actor=actor,
            action=AuditAction.UPSTREAM_UPDATE,
            target=f"upstream:{name}",
            detail=_detail(upstream, changed),
        )
    return upstream, False


def upstream_delete(*, actor, upstream: Upstream) -> int:
    """Remove an upstream and every version mirrored from it; returns how many versions went."""
    with transaction.atomic():
        count = upstream.versions.count()
        audit_event_record(
            actor=actor,
            action=AuditAction.UPSTREAM_DELETE,
            target=f"upstream:{upstream.name}",
            detail={"url": upstream.url, "versions": count},
        )
        upstream.delete()
        LISTINGS.bump()
    return count
