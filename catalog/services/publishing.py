"""Publishing a version of a server.json document (POST /v0.1/publish and /v0/publish)."""

from django.db import transaction
from django.utils import timezone

from accounts.choices import AuditAction
from accounts.services import actor_user, audit_event_record
from catalog import policies
from catalog.documents import InvalidDocument, check_document
from catalog.models import ServerVersion
from catalog.services.latest import latest_recompute, name_lock

MAX_VERSIONS_PER_SERVER = 10_000


class CatalogRefused(Exception):
    """A write the registry refuses: `status` is the HTTP status that says why (400, 403, 404)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def version_publish(*, actor, document) -> ServerVersion:
    """Store a new version of a server: the whole document, active, latest if the rule says so.

    `actor` is the caller's Principal; refused (CatalogRefused) when it may not publish the name, the name
    is the gateway's or mirrored from an upstream, or the version exists."""
    try:
        document = check_document(document)
    except InvalidDocument as invalid:
        raise CatalogRefused(400, str(invalid)) from None
    name, version = document["name"], document["version"]
    if why := policies.publish_refusal(actor, name) or policies.gateway_name_refusal(name):
        raise CatalogRefused(403, why)
    if version.strip() != version or version == "latest":
        raise CatalogRefused(400, "version must be a specific version, such as 1.0.2 (not latest).")
    now = timezone.now()
    with transaction.atomic():
        name_lock(name)
        versions = ServerVersion.objects.filter(name=name)
        # The upstream's name alone: the whole rows (documents, embeddings) take milliseconds to select.
        mirrored = versions.filter(upstream__isnull=False)
        mirrored_from = mirrored.values_list("upstream__name", flat=True).first()
        if mirrored_from is not None:
            raise CatalogRefused(
                403,
                f"{name} is mirrored from the upstream {mirrored_from}; an administrator must "
                "detach it before versions can be published here.",
            )
        if versions.filter(version=version).exists():
            raise CatalogRefused(
                400, f"Version {version} of {name} is already published; published versions never change."
            )
        if versions.count() >= MAX_VERSIONS_PER_SERVER:
            raise CatalogRefused(
                400, f"{name} has {MAX_VERSIONS_PER_SERVER} versions, the most a server may."
            )
        row = ServerVersion.objects.create(
            name=name,
            version=version,
            document=document,
            description=document.get("description", ""),
            status_changed_at=now,
            published_at=now,
            updated_at=now,
            published_by=actor_user(actor),
        )
        latest_recompute(name)
        audit_event_record(
            actor=actor,
            action=AuditAction.VERSION_PUBLISH,
            target=f"server:{name}",
            detail={"version": version},
        )
    row.refresh_from_db(fields=["is_latest"])
    return row
