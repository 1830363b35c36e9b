"""Skills mirrored from MCP servers that serve them by the skills extension (SEP-2640). Each health check
lists a server's skills (servers/served_skills.py); a skill whose set of file digests the registry does
not hold yet is read from the server, every file checked against its listed digest, then checked by the
agentskills rules, scanned and stored like an upload (skills/services.py) at `<server path>/<skill
path>`: skills of two servers never share a path, nor with a published skill. Pinned like any other: a
mirrored skill that changed upstream waits for an operator's approval and the approved version is served
meanwhile. A mirrored skill is `internal` with no owner and no groups, so administrators alone see it
until an operator gives it groups or makes it public."""

from __future__ import annotations

import logging
from functools import partial

from django.conf import settings
from django.core.exceptions import ValidationError

from core.errors import ApiError
from core.validators import normalize_path, validate_registry_path
from core.visibility import Visibility
from servers.health import in_session
from servers.served_skills import SkillFetchFailed, read_files
from skills.archives import ArchiveRefused, digest_of, read_folder
from skills.choices import Source
from skills.models import SkillVersion
from skills.rules import SkillRefused
from skills.services import Origin, skill_version_publish

logger = logging.getLogger(__name__)


def skills_listed(server, entries: list[dict]) -> int:
    """Mirror what changed of a server's listed skills; how many versions were stored. Never raises: a
    server that cannot be read leaves its mirrored skills as they were (logged)."""
    changed = [(path, entry) for entry in entries if (path := _changed_path(server, entry)) is not None]
    if not changed:
        return 0
    try:
        fetched = in_session(
            server,
            partial(_read_all, [entry for _, entry in changed]),
            timeout=float(settings.HEALTH_CHECK_TIMEOUT_SECONDS),
        )
    except Exception:  # noqa: BLE001 - whatever the server does, the check that asked goes on
        logger.warning("The skills of %s could not be read", server.path, exc_info=True)
        return 0
    stored = 0
    for (path, entry), files in zip(changed, fetched, strict=True):
        if isinstance(files, SkillFetchFailed):
            logger.warning("A skill of %s is not mirrored: %s", server.path, files)
            continue
        origin = Origin(
            path=path,
            source=Source.MIRROR,
            source_url=server.proxy_pass_url,
            source_ref=entry["uri"],
            server_id=server.pk,
        )
        try:
            read = read_folder(files, path.rsplit("/", 1)[-1])
            _, _, new = skill_version_publish(
                actor=None, read=read, visibility=Visibility.INTERNAL, origin=origin
            )
        except (ArchiveRefused, SkillRefused, ApiError) as refused:
            logger.warning("%s of %s is not mirrored: %s", entry["uri"][:200], server.path, refused)
            continue
        stored += new
    return stored


def _changed_path(server, entry: dict) -> str | None:
    """The registry path of a listed skill whose digests the registry does not hold yet, or None."""
    path = normalize_path(f"{server.path}/{entry['skill_path']}")
    try:
        validate_registry_path(path)
    except ValidationError:
        logger.info("A skill of %s has a path the registry cannot hold: %.200s", server.path, path)
        return None
    digest = digest_of([{"path": name, "sha256": sha256} for name, sha256 in entry["files"].items()])
    return None if SkillVersion.objects.filter(skill__path=path, digest=digest).exists() else path


async def _read_all(entries: list[dict], client) -> list[dict | SkillFetchFailed]:
    found = []
    for entry in entries:
        try:
            found.append(
                await read_files(
                    client, entry, max_files=settings.SKILL_MAX_FILES, max_bytes=settings.SKILL_MAX_BYTES
                )
            )
        except SkillFetchFailed as failed:
            found.append(failed)
    return found
