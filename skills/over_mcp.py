"""Skills as the MCP skills extension shows them (SEP-2640, `io.modelcontextprotocol/skills`): a skill's
files are resources at `skill://<skill path>/<file path>`, its entry is its `SKILL.md`'s URI, its
frontmatter verbatim and every file's digest, and each folder of a skill is a directory resource. The skill
path is the skill's registry path, so a skill mirrored from a server (`<server path>/<name>`) never shadows
a published one of the same name, nor one mirrored from another server."""

from __future__ import annotations

import mimetypes
from dataclasses import dataclass, field

EXTENSION = "io.modelcontextprotocol/skills"
SCHEME = "skill://"
SKILL_MD = "SKILL.md"
DIRECTORY_TYPE = "inode/directory"
TEXT_TYPES = {
    ".md": "text/markdown",
    ".py": "text/x-python",
    ".sh": "text/x-shellscript",
    ".txt": "text/plain",
}


def root_uri(skill_path: str) -> str:
    """`skill://<skill path>`: the skill's folder (no trailing slash)."""
    return SCHEME + skill_path.strip("/")


def file_uri(skill_path: str, file_path: str) -> str:
    return f"{root_uri(skill_path)}/{file_path}"


def mime_type(file_path: str) -> str:
    suffix = "." + file_path.rsplit(".", 1)[-1].lower() if "." in file_path else ""
    return TEXT_TYPES.get(suffix) or mimetypes.guess_type(file_path)[0] or "application/octet-stream"


def entry(skill_path: str, frontmatter: dict, files: list[dict]) -> dict:
    """A skill's entry of `skills/list` and `skills/get`: every file once, with its digest."""
    return {
        "uri": file_uri(skill_path, SKILL_MD),
        "frontmatter": frontmatter,
        "resources": [
            {"uri": file_uri(skill_path, item["path"]), "digest": f"sha256:{item['sha256']}"}
            for item in files
        ],
    }


@dataclass
class Served:
    """The skills one caller is served, in order: what `skills/list` pages through, and how a URI leads
    to a skill and one of its files or folders."""

    entries: list[dict] = field(default_factory=list)
    skills: dict[str, tuple[int, list[dict], dict]] = field(default_factory=dict)  # root → pk, files, entry

    def add(self, skill_pk: int, skill_path: str, frontmatter: dict, files: list[dict]) -> None:
        found = entry(skill_path, frontmatter, files)
        self.entries.append(found)
        self.skills[root_uri(skill_path)] = (skill_pk, files, found)

    def located(self, uri: str) -> tuple[int, list[dict], str] | None:
        """(the skill's pk, its files, the path in it) of a URI under a served skill's root (the longest
        root that holds it: skills may nest), or None. The path is "" for the skill's root itself."""
        if not isinstance(uri, str) or not uri.startswith(SCHEME):
            return None
        candidate = uri.rstrip("/")
        while candidate.startswith(SCHEME) and len(candidate) > len(SCHEME):
            if candidate in self.skills:
                pk, files, _ = self.skills[candidate]
                return pk, files, uri[len(candidate) :].strip("/")
            candidate = candidate.rpartition("/")[0]
        return None

    def entry_of(self, uri: str) -> dict | None:
        """The entry of the skill whose `SKILL.md` is `uri`, or None."""
        found = self.skills.get(uri.removesuffix(f"/{SKILL_MD}")) if isinstance(uri, str) else None
        return found[2] if found is not None and found[2]["uri"] == uri else None


def children(folder_uri: str, files: list[dict], folder: str) -> list[dict] | None:
    """The direct children of `folder` ("" for the skill's root; `folder_uri` its URI) as resources, files
    with their type and size, folders as directory resources; None when `folder` is no folder of the
    skill."""
    prefix = f"{folder}/" if folder else ""
    if folder and not any(item["path"].startswith(prefix) for item in files):
        return None
    found: dict[str, dict] = {}
    for item in files:
        if not item["path"].startswith(prefix):
            continue
        rest = item["path"][len(prefix) :]
        name, separator, _ = rest.partition("/")
        uri = f"{folder_uri}/{name}"
        if separator:
            found.setdefault(name, {"uri": uri, "name": name, "mimeType": DIRECTORY_TYPE})
        else:
            found[name] = {"uri": uri, "name": name, "mimeType": mime_type(name), "size": item["size"]}
    return [found[name] for name in sorted(found)]
