"""Reads of skills, by the one visibility rule (core/visibility.py): a skill a caller may not see is absent
from every listing and 404 on every read. Every read serves the approved version."""

from __future__ import annotations

import hashlib

from django.db.models import Q

from core import attestations
from core.errors import ApiError, ErrorCode
from core.validators import normalize_path
from core.visibility import visible_rows
from servers.scanning import worst
from skills.choices import Source
from skills.models import Skill, SkillFile, SkillVersion
from skills.over_mcp import Served

ATTESTATION_META = attestations.meta_key()


def skills_visible(principal):
    return visible_rows(Skill.objects.all(), principal, "skills").select_related("approved", "owner")


def published(principal):
    """The skills published in the registry itself (uploads, Git) the caller may see: those the well-known
    index lists by name. Mirrored ones share names across servers, so they are served by path only."""
    return skills_visible(principal).exclude(source=Source.MIRROR)


def skill_seen(principal, skill_path: str) -> Skill:
    """The skill at `skill_path` when `principal` may see it; ApiError 404 otherwise (whether it exists or
    not: the same answer)."""
    path = normalize_path(skill_path)
    skill = skills_visible(principal).filter(path=path).first()
    if skill is None:
        raise ApiError(404, ErrorCode.NOT_FOUND, f"No skill you can see is at {path}.")
    return skill


def approved_file(skill: Skill, file_path: str) -> SkillFile:
    """A file of the skill's approved version, its bytes checked against their approved digest."""
    found = None
    if skill.approved_id is not None:
        found = SkillFile.objects.filter(version_id=skill.approved_id, path=file_path).first()
    if found is None:
        raise ApiError(404, ErrorCode.NOT_FOUND, f"{skill.path} has no file {file_path[:200]!r}.")
    verified(bytes(found.content), found.sha256)
    return found


def verified(data: bytes, sha256: str) -> bytes:
    """`data`, when it still has the digest it was approved with: a row changed behind the registry's back
    is never served (409)."""
    if hashlib.sha256(data).hexdigest() != sha256:
        raise ApiError(
            409, ErrorCode.CONFLICT, "This skill's stored files no longer match their approved digests."
        )
    return data


def skill_shown(skill: Skill, *, versions: bool = False) -> dict:
    """A skill as the API shows it: what its approved version's frontmatter says and its files."""
    approved = skill.approved
    shown = {
        "path": skill.path,
        "name": skill.name,
        "description": skill.description,
        "license": skill.license,
        "compatibility": skill.compatibility,
        "allowed_tools": skill.allowed_tools,
        "metadata": skill.metadata,
        "tags": skill.tags,
        "visibility": skill.visibility,
        "owner": skill.owner.username if skill.owner else None,
        "source": skill.source,
        "digest": approved.digest if approved else None,
        "files": approved.files if approved else [],
        "scan": {
            "worst": worst(approved.findings) if approved else None,
            "findings": approved.findings if approved else [],
        },
        "_meta": {ATTESTATION_META: {"attestation": approved.attestation}} if approved else {},
        "updated_at": skill.updated_at.isoformat(),
    }
    if versions:
        shown["versions"] = [
            {
                "digest": version.digest,
                "status": version.status,
                "files": len(version.files),
                "worst": worst(version.findings),
                "created_at": version.created_at.isoformat(),
            }
            for version in skill.versions.all()
        ]
    return shown


def attestation_of_content(sha256: str) -> str | None:
    """The attestation of the skill version a content digest names (its files' set or its archive), for
    `GET /api/attestations/<sha256>` (core/attestations.py): a public statement about content, found by
    anyone who holds the digest, the content itself staying behind the visibility rule."""
    found = (
        SkillVersion.objects.filter(Q(digest=sha256) | Q(archive_sha256=sha256))
        .exclude(attestation="")
        .values_list("attestation", flat=True)
        .first()
    )
    return found or None


def file_changes(approved: SkillVersion, version: SkillVersion) -> list[tuple[str, str | None, str | None]]:
    """(path, its text in `approved` or None, its text in `version` or None) for each file that differs
    between two versions; a file that is not text reads as its size and digest."""
    old = {entry["path"]: entry["sha256"] for entry in approved.files}
    new = {entry["path"]: entry["sha256"] for entry in version.files}
    changed = sorted(path for path in old.keys() | new.keys() if old.get(path) != new.get(path))
    contents = {
        (row.version_id, row.path): bytes(row.content)
        for row in SkillFile.objects.filter(version__in=[approved, version], path__in=changed)
    }

    def text(owner: SkillVersion, path: str) -> str | None:
        data = contents.get((owner.pk, path))
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return f"(not text: {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()})"

    return [(path, text(approved, path), text(version, path)) for path in changed]


def served_over_mcp(skill_ids, principal) -> Served:
    """The skills among `skill_ids` that `principal` may see, with their approved versions, as the MCP
    skills extension serves them (skills/over_mcp.py): by path, a skill with no approved version left out."""
    served = Served()
    rows = (
        skills_visible(principal)
        .filter(pk__in=list(skill_ids), approved__isnull=False)
        .select_related(None)
        .select_related("approved")
        .order_by("path")
        .only("pk", "path", "approved__frontmatter", "approved__files")
    )
    for skill in rows:
        served.add(skill.pk, skill.path, skill.approved.frontmatter, skill.approved.files)
    return served


def approved_bytes(skill_pk: int, file_path: str) -> bytes:
    """A file of the approved version of the skill `skill_pk`, checked against its digest (ApiError 404
    when there is no such file, 409 when its bytes changed behind the registry's back)."""
    skill = Skill.objects.only("pk", "path", "approved_id").filter(pk=skill_pk).first()
    if skill is None:
        raise ApiError(404, ErrorCode.NOT_FOUND, "That skill is gone.")
    return bytes(approved_file(skill, file_path).content)
