"""What an MCP server serves by the skills extension (SEP-2640, `io.modelcontextprotocol/skills`), read
over the session its health check opens (servers/health.py): the `skills/list` entries, checked in shape
and bounded, and a skill's files read one by one with `resources/read`, each checked against the digest
its entry gives. The skills app mirrors what changed (skills/mirroring.py); nothing here stores a skill.

A server is a party the registry does not run: an entry that is not the SEP's shape, a file outside its
skill's folder, a file whose bytes do not have the digest the listing promised, or more than the skills'
size bounds is refused, the rest of the listing kept."""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import re
from typing import Any, Literal

import mcp_types
from pydantic import TypeAdapter

logger = logging.getLogger(__name__)

EXTENSION = "io.modelcontextprotocol/skills"
MAX_SKILLS = 200  # a server's listing is read up to this many skills
MAX_PAGES = 20
DIGEST = re.compile(r"^sha256:([0-9a-f]{64})$")
SKILL_PATH = re.compile(r"^[A-Za-z0-9._~-]+(/[A-Za-z0-9._~-]+)*$")
_ANSWER = TypeAdapter(dict[str, Any])


class SkillFetchFailed(Exception):
    """A skill's files could not be read as its entry promised; the text says why, for the log."""


class _SkillsList(mcp_types.Request[mcp_types.PaginatedRequestParams | None, Literal["skills/list"]]):
    method: Literal["skills/list"] = "skills/list"
    params: mcp_types.PaginatedRequestParams | None = None


async def skills_of(client) -> list[dict] | None:
    """The skills of a server that declares the extension; None when it declares none or cannot list them
    (its check does not fail for it, and its mirrored skills stay as they were)."""
    if EXTENSION not in (client.server_capabilities.extensions or {}):
        return None
    try:
        return await listed_skills(client)
    except Exception:  # noqa: BLE001 - whatever a server's skills/list does, the check goes on
        logger.info("skills/list failed during a health check", exc_info=True)
        return None


async def listed_skills(client) -> list[dict]:
    """The server's skills, each `{uri, skill_path, frontmatter, files: {path in the skill: sha256}}`;
    entries that are not the SEP's shape are left out (logged)."""
    found: dict[str, dict] = {}
    cursor, seen = None, set()
    for _ in range(MAX_PAGES):
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await client.session.send_request(_SkillsList(params=params), _ANSWER)
        for item in page.get("skills") if isinstance(page.get("skills"), list) else []:
            if (entry := _entry(item)) is not None:
                found.setdefault(entry["uri"], entry)
            if len(found) >= MAX_SKILLS:
                return list(found.values())
        cursor = page.get("nextCursor")
        if not isinstance(cursor, str) or cursor in seen:
            break
        seen.add(cursor)
    return list(found.values())


def _entry(item) -> dict | None:
    if not isinstance(item, dict) or not isinstance(item.get("uri"), str):
        return None
    uri, frontmatter, resources = item["uri"], item.get("frontmatter"), item.get("resources")
    scheme, separator, rest = uri.partition("://")
    skill_path = rest.removesuffix("/SKILL.md")
    if not separator or not rest.endswith("/SKILL.md") or not SKILL_PATH.match(skill_path):
        logger.info("A skills/list entry with an unusable URI is left out: %.200s", uri)
        return None
    if not isinstance(frontmatter, dict) or not isinstance(resources, list):
        logger.info("A skills/list entry without frontmatter or resources is left out: %.200s", uri)
        return None
    root, files = f"{scheme}://{skill_path}/", {}
    for resource in resources:
        if not isinstance(resource, dict) or not isinstance(resource.get("uri"), str):
            return None
        digest = DIGEST.match(str(resource.get("digest", "")))
        if not resource["uri"].startswith(root) or digest is None:
            logger.info("%.200s lists a file outside its folder or without a digest: left out", uri)
            return None
        files[resource["uri"][len(root) :]] = digest.group(1)
    if "SKILL.md" not in files:
        return None
    return {"uri": uri, "root": root, "skill_path": skill_path, "frontmatter": frontmatter, "files": files}


async def read_files(client, entry: dict, *, max_files: int, max_bytes: int) -> dict[str, bytes]:
    """Every file of a listed skill, by its path in the skill, each checked against its listed digest;
    SkillFetchFailed when one differs or the skill passes the size bounds."""
    if len(entry["files"]) > max_files:
        raise SkillFetchFailed(f"{entry['uri']} lists more than {max_files} files")
    read, total = {}, 0
    for path, sha256 in sorted(entry["files"].items()):
        result = await client.read_resource(entry["root"] + path)
        data = _bytes_of(result.contents[0]) if result.contents else b""
        total += len(data)
        if total > max_bytes:
            raise SkillFetchFailed(f"{entry['uri']} holds more than {max_bytes} bytes")
        if hashlib.sha256(data).hexdigest() != sha256:
            raise SkillFetchFailed(f"{entry['root']}{path} does not have the digest its listing gives")
        read[path] = data
    return read


def _bytes_of(content) -> bytes:
    text = getattr(content, "text", None)
    if isinstance(text, str):
        return text.encode("utf-8")
    try:
        return base64.b64decode(getattr(content, "blob", "") or "", validate=True)
    except (binascii.Error, ValueError):
        raise SkillFetchFailed("a file's blob is not base64") from None
