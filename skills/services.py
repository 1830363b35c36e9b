"""Publishing and removing skills. A version is read from an archive (skills/archives.py), its SKILL.md
checked by the agentskills rules (skills/rules.py) and every file scanned (skills/scanning.py). A skill's
first version is approved as it is, as registering a server approves the tools it offers then, unless the
scan holds it; a later version with another digest waits for an operator's approval, and meanwhile every
surface serves the approved one. Each publication, approval, block and removal is audited."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.choices import AuditAction
from accounts.services import audit_event_record
from core import attestations
from core.embeddings import EMBED_SKILLS_TASK, embed_after_commit
from core.errors import ApiError, ErrorCode
from core.timestamps import rfc3339
from core.visibility import Visibility
from servers import scanning
from skills import archives
from skills import scanning as skill_scanning
from skills.choices import Source, VersionStatus
from skills.git_source import read_from_git
from skills.models import Skill, SkillFile, SkillVersion
from skills.rules import frontmatter_of
from skills.scanning import scan_files


@dataclass(frozen=True)
class Origin:
    """Where a version comes from besides an upload: its skill's registry path (`/<name>` when empty),
    and the source it is fetched again from (a Git repository at a ref, an MCP server that serves it)."""

    path: str
    source: str
    source_url: str = ""
    source_ref: str = ""
    server_id: int | None = None  # the server a mirrored skill comes from


@dataclass(frozen=True)
class _Candidate:
    """A version as read, checked and scanned before any row is locked (a scan takes its time)."""

    read: archives.SkillFiles
    frontmatter: dict
    listing: list[dict]
    digest: str
    findings: list[dict]
    archive_sha256: str
    origin: Origin


UPLOADED = Origin(path="", source=Source.UPLOAD)


def skill_publish(*, actor, data: bytes, visibility: str = Visibility.PUBLIC):
    """A version of a skill from an archive's bytes, published by `actor` (the caller's Principal): (the
    skill, the version, whether it is new). ArchiveRefused and SkillRefused name the rule a hostile or
    malformed archive breaks."""
    return skill_version_publish(actor=actor, read=archives.read_archive(data), visibility=visibility)


def skill_publish_from_git(
    *, actor, url: str, ref: str, folder: str = "", visibility: str = Visibility.PUBLIC
):
    """A version of a skill read from a Git repository at a ref (skills/git_source.py: GitRefused names the
    rule a repository breaks), published by `actor` as an upload is; the commit is the version's ref."""
    read, commit = read_from_git(url, ref, folder)
    source_url = f"{url.strip()}#{folder.strip('/')}" if folder.strip("/") else url.strip()
    origin = Origin(path="", source=Source.GIT, source_url=source_url, source_ref=commit)
    return skill_version_publish(actor=actor, read=read, visibility=visibility, origin=origin)


def skill_version_publish(
    *, actor, read: archives.SkillFiles, visibility: str = Visibility.PUBLIC, origin: Origin = UPLOADED
):
    """A version of a skill from its files as read (an archive, a Git checkout, a mirrored server's
    resources), checked, scanned and stored: (the skill, the version, whether it is new). Without an
    `origin` it is an upload, at `/<name>`. `actor` None is the registry itself (mirroring)."""
    frontmatter = frontmatter_of(read.files[archives.SKILL_MD], read.folder)
    listing = read.listing()
    candidate = _Candidate(
        read=read,
        frontmatter=frontmatter,
        listing=listing,
        digest=archives.digest_of(listing),
        findings=scan_files(read.files),
        archive_sha256=hashlib.sha256(archives.packed(read.files)).hexdigest(),
        origin=replace(origin, path=origin.path or f"/{frontmatter['name']}"),
    )
    try:
        return _stored(actor, candidate, visibility)
    except IntegrityError:  # the same skill or version published at the same moment by another request
        raise ApiError(
            409,
            ErrorCode.CONFLICT,
            f"{candidate.origin.path} was being published at the same moment; try again.",
        ) from None


def _stored(actor, candidate: _Candidate, visibility: str):
    origin, frontmatter, digest = candidate.origin, candidate.frontmatter, candidate.digest
    path, listing, findings = origin.path, candidate.listing, candidate.findings
    with transaction.atomic():
        skill = Skill.objects.select_for_update().filter(path=path).first()
        if skill is not None and not _may_change(actor, skill):
            raise ApiError(403, ErrorCode.PERMISSION_DENIED, f"{path} is another user's skill.")
        if skill is None:
            skill = Skill.objects.create(
                path=path,
                name=frontmatter["name"],
                description=frontmatter["description"].strip(),
                visibility=visibility,
                owner=getattr(actor, "user", None),
                source=origin.source,
                source_url=origin.source_url,
                mirrored_from_id=origin.server_id,
            )
        elif (skill.source, skill.source_url) != (origin.source, origin.source_url):
            skill.source, skill.source_url = origin.source, origin.source_url
            skill.save(update_fields=["source", "source_url", "updated_at"])
        known = skill.versions.filter(digest=digest).first()
        if known is not None:
            return skill, known, False
        first = skill.approved_id is None and not skill.versions.exists()
        status = VersionStatus.APPROVED if first and not scanning.holds(findings) else VersionStatus.PENDING
        version = SkillVersion.objects.create(
            skill=skill,
            digest=digest,
            archive_sha256=candidate.archive_sha256,
            files=listing,
            frontmatter=frontmatter,
            findings=findings,
            attestation=attestation_of(digest, candidate.archive_sha256, listing, findings),
            status=status,
            source_ref=origin.source_ref,
            decided_at=timezone.now() if status == VersionStatus.APPROVED else None,
        )
        SkillFile.objects.bulk_create(
            SkillFile(
                version=version,
                path=entry["path"],
                size=entry["size"],
                sha256=entry["sha256"],
                content=candidate.read.files[entry["path"]],
            )
            for entry in listing
        )
        if status == VersionStatus.APPROVED:
            _approve(skill, version, frontmatter)
        audit_event_record(
            actor=actor,
            action=AuditAction.SKILL_PUBLISH,
            target=f"skill:{path}",
            detail={
                "digest": digest,
                "files": len(listing),
                "status": status,
                "worst": scanning.worst(findings),
                "source": origin.source,
                **({"ref": origin.source_ref} if origin.source_ref else {}),
            },
        )
    return skill, version, True


def attestation_of(digest: str, archive_sha256: str, listing: list[dict], findings: list[dict]) -> str:
    """The registry's signed statement of what it scanned in a version and what it found
    (core/attestations.py): every digest a client may hold, the verdict, when, with what, under which
    policy."""
    return attestations.sign(
        {
            "sub": f"sha256:{digest}",
            "digests": {
                "set": f"sha256:{digest}",
                "archive": f"sha256:{archive_sha256}",
                "files": {entry["path"]: f"sha256:{entry['sha256']}" for entry in listing},
            },
            "verdict": scanning.verdict([findings]),
            "scanned_at": rfc3339(timezone.now()),
            "scanner": skill_scanning.scanner_name(),
            "scanner_version": skill_scanning.scanner_version(),
            "policy": {"high_holds": settings.TOOL_SCAN_HIGH_HOLDS, "rules": skill_scanning.rules_ref()},
        }
    )


def _approve(skill: Skill, version: SkillVersion, frontmatter: dict) -> None:
    """Serve `version`: the skill says what its frontmatter says, and is found by it (embedded anew)."""
    skill.embedding_dirty = True
    embed_after_commit(EMBED_SKILLS_TASK, [skill.pk])
    skill.approved = version
    skill.description = frontmatter["description"].strip()
    skill.license = str(frontmatter.get("license", ""))[:200]
    skill.compatibility = str(frontmatter.get("compatibility", ""))
    skill.allowed_tools = str(frontmatter.get("allowed-tools", ""))[:2000]
    skill.metadata = frontmatter.get("metadata") or {}
    skill.save()


def skill_version_approve(*, actor, version: SkillVersion, override: bool = False) -> None:
    """Serve `version` from now on (the skill's frontmatter follows it). A version whose scan holds it
    (servers/scanning.holds) is approved only with `override`."""
    if scanning.holds(version.findings) and not override:
        raise ApiError(
            409,
            ErrorCode.CONFLICT,
            f"This version of {version.skill.path} has high-severity scan findings: approve it with an "
            "override.",
        )
    with transaction.atomic():
        version.status, version.decided_at = VersionStatus.APPROVED, timezone.now()
        version.decided_by = getattr(actor, "user", actor) if actor is not None else None
        version.save(update_fields=["status", "decided_at", "decided_by"])
        _approve(version.skill, version, version.frontmatter)
        audit_event_record(
            actor=actor,
            action=AuditAction.SKILL_APPROVE,
            target=f"skill:{version.skill.path}",
            detail={"digest": version.digest, "override": override},
        )


def skill_version_block(*, actor, version: SkillVersion) -> None:
    """Never serve `version` (the approved one, if another, stays)."""
    with transaction.atomic():
        version.status, version.decided_at = VersionStatus.BLOCKED, timezone.now()
        version.decided_by = getattr(actor, "user", actor) if actor is not None else None
        version.save(update_fields=["status", "decided_at", "decided_by"])
        if version.skill.approved_id == version.pk:
            Skill.objects.filter(pk=version.skill_id).update(approved=None)
        audit_event_record(
            actor=actor,
            action=AuditAction.SKILL_BLOCK,
            target=f"skill:{version.skill.path}",
            detail={"digest": version.digest},
        )


SHARING_FIELDS = ("visibility", "tags")
TAG_MAX = 64


def skill_sharing_update(*, actor, skill: Skill, fields: dict, groups=None) -> Skill:
    """Who sees a skill and how it is tagged: `fields` among SHARING_FIELDS, `groups` (Django groups) the
    ones that see it when `internal`. What it holds is its versions' alone, never edited here."""
    if not _may_change(actor, skill):
        raise ApiError(403, ErrorCode.PERMISSION_DENIED, f"{skill.path} is another user's skill.")
    unknown = set(fields) - set(SHARING_FIELDS)
    if unknown:
        raise ApiError(
            400, ErrorCode.BAD_REQUEST, f"Only {', '.join(SHARING_FIELDS)} and groups change here."
        )
    if "visibility" in fields and fields["visibility"] not in Visibility.values:
        raise ApiError(400, ErrorCode.BAD_REQUEST, f"visibility is one of {', '.join(Visibility.values)}.")
    if "tags" in fields:
        tags = fields["tags"]
        if not isinstance(tags, list) or not all(
            isinstance(tag, str) and 0 < len(tag) <= TAG_MAX for tag in tags
        ):
            raise ApiError(400, ErrorCode.BAD_REQUEST, f"tags are a list of 1 to {TAG_MAX} characters each.")
        fields = {**fields, "tags": list(dict.fromkeys(tag.strip() for tag in tags))}
    with transaction.atomic():
        for name, value in fields.items():
            setattr(skill, name, value)
        skill.embedding_dirty = skill.embedding_dirty or "tags" in fields
        skill.save()
        if groups is not None:
            skill.groups.set(groups)
        if "tags" in fields:
            embed_after_commit(EMBED_SKILLS_TASK, [skill.pk])
        audit_event_record(
            actor=actor,
            action=AuditAction.SKILL_UPDATE,
            target=f"skill:{skill.path}",
            detail={
                **{name: value for name, value in fields.items()},
                **({"groups": sorted(group.name for group in groups)} if groups is not None else {}),
            },
        )
    return skill


def skill_delete(*, actor, skill: Skill) -> None:
    """Remove a skill, by its owner or an administrator (`actor`: the caller's Principal)."""
    if not _may_change(actor, skill):
        raise ApiError(403, ErrorCode.PERMISSION_DENIED, f"{skill.path} is another user's skill.")
    path = skill.path
    with transaction.atomic():
        skill.delete()
        audit_event_record(actor=actor, action=AuditAction.SKILL_DELETE, target=f"skill:{path}")


def _may_change(principal, skill: Skill) -> bool:
    if principal is None:  # the registry itself, mirroring a server's skills
        return skill.source == Source.MIRROR
    return principal.is_admin or (principal.user is not None and skill.owner_id == principal.user.pk)
