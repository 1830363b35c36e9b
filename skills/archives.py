"""A skill's files read from an uploaded `.tar.gz` or `.zip`, as hostile input: nothing is written to disk,
every member is read through a bound (so a header that lies about its size, or a zip bomb, stops at
SKILL_MAX_BYTES), no path may leave the skill's folder (`..`, absolute paths, backslashes, drive letters),
no link or device is taken, at most SKILL_MAX_FILES files. The skill's folder is the archive's one
top-level folder (`pdf-tools/SKILL.md`, ...), or the archive's root when SKILL.md sits there.

`digest_of(files)` is the digest a version is known by: the sha256 of its files' list (each
`<sha256>  <path>` line, sorted by path, as `sha256sum` prints them)."""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
import zipfile
from dataclasses import dataclass

from django.conf import settings

SKILL_MD = "SKILL.md"
_CHUNK = 64 * 1024


class ArchiveRefused(ValueError):
    """An archive the registry will not read: `rule` names the rule it breaks."""

    def __init__(self, rule: str, message: str):
        super().__init__(message)
        self.rule = rule


@dataclass(frozen=True)
class SkillFiles:
    folder: str  # the skill folder's name ("" when SKILL.md sits at the archive's root)
    files: dict[str, bytes]  # path inside the skill folder -> bytes

    def listing(self) -> list[dict]:
        return [
            {"path": path, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
            for path, data in sorted(self.files.items())
        ]


def digest_of(listing: list[dict]) -> str:
    lines = "".join(
        f"{entry['sha256']}  {entry['path']}\n" for entry in sorted(listing, key=lambda e: e["path"])
    )
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def read_archive(data: bytes) -> SkillFiles:
    """The skill folder in an archive's bytes (a gzipped tar or a zip, whatever its name says);
    ArchiveRefused naming the rule otherwise."""
    if data[:2] == b"\x1f\x8b":  # by what the bytes are, not by what the name says
        members = _tar_members(data)
    elif data[:4] == b"PK\x03\x04":
        members = _zip_members(data)
    else:
        raise ArchiveRefused("archive_format", "Upload a .tar.gz or a .zip of the skill's folder.")
    return _folder_of(members)


def read_folder(files: dict[str, bytes], folder: str) -> SkillFiles:
    """A skill's folder from files fetched one by one (a Git checkout, a server's resources), under the
    rules an archive's files obey: safe paths, the count and size bounds, SKILL.md at the root."""

    def members():
        for name, data in files.items():
            _check_path(name)
            yield name, io.BytesIO(data)

    read = _folder_of(members())
    if read.folder:
        raise ArchiveRefused("skill_md_at_root", "SKILL.md must sit at the root of the skill's folder.")
    return SkillFiles(folder, read.files)


def _tar_members(data: bytes):
    try:
        archive = tarfile.open(fileobj=io.BytesIO(data), mode="r:gz")
    except (tarfile.TarError, OSError, EOFError) as error:
        raise ArchiveRefused("archive_format", f"The archive cannot be read: {error}.") from None
    with archive:
        try:
            for member in archive:
                if member.isdir():
                    continue
                if not member.isfile():
                    raise ArchiveRefused(
                        "no_links", f"{member.name}: links and special files are not taken in a skill."
                    )
                _check_path(member.name)
                stream = archive.extractfile(member)
                yield member.name, stream
        except (tarfile.TarError, OSError, EOFError) as error:
            raise ArchiveRefused("archive_format", f"The archive cannot be read: {error}.") from None


def _zip_members(data: bytes):
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError) as error:
        raise ArchiveRefused("archive_format", f"The archive cannot be read: {error}.") from None
    with archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            if (info.external_attr >> 16) & 0o170000 not in (0, 0o100000):  # a symlink or other
                raise ArchiveRefused("no_links", f"{info.filename}: links and special files are not taken.")
            _check_path(info.filename)
            try:
                stream = archive.open(info)
            except (zipfile.BadZipFile, NotImplementedError, RuntimeError, OSError) as error:
                raise ArchiveRefused("archive_format", f"{info.filename} cannot be read: {error}.") from None
            yield info.filename, stream


def _check_path(name: str) -> None:
    parts = name.split("/")
    if (
        name.startswith("/")
        or "\\" in name
        or any(part in ("..", "") for part in parts[:-1])
        or parts[-1] in ("", "..", ".")
        or (len(name) > 1 and name[1] == ":")
        or "\x00" in name
    ):
        raise ArchiveRefused("safe_paths", f"{name!r}: paths must stay inside the skill's folder.")


def _folder_of(members) -> SkillFiles:
    files: dict[str, bytes] = {}
    total = 0
    for name, stream in members:
        name = name.removeprefix("./")
        if len(files) >= settings.SKILL_MAX_FILES:
            raise ArchiveRefused("file_count", f"A skill holds at most {settings.SKILL_MAX_FILES} files.")
        chunks = []
        while chunk := stream.read(_CHUNK):
            total += len(chunk)
            if total > settings.SKILL_MAX_BYTES:
                raise ArchiveRefused(
                    "unpacked_size", f"A skill holds at most {settings.SKILL_MAX_BYTES} bytes once unpacked."
                )
            chunks.append(chunk)
        if name in files:
            raise ArchiveRefused("safe_paths", f"{name}: the archive holds this path twice.")
        files[name] = b"".join(chunks)
    if SKILL_MD in files:
        return SkillFiles("", files)
    tops = {name.split("/", 1)[0] for name in files}
    if len(tops) == 1 and all("/" in name for name in files):
        folder = tops.pop()
        inside = {name.split("/", 1)[1]: data for name, data in files.items()}
        if SKILL_MD in inside:
            return SkillFiles(folder, inside)
    raise ArchiveRefused("skill_md_at_root", "SKILL.md must sit at the root of the skill's folder.")


def packed(files: dict[str, bytes]) -> bytes:
    """A skill's files as the .tar.gz the registry serves (the well-known index's `archive`): the files at
    the archive's root, sorted by path, with no owner, time or host in it, so the same files always give
    the same bytes, and the same digest."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for path in sorted(files):
            info = tarfile.TarInfo(path)
            info.size, info.mtime, info.uid, info.gid = len(files[path]), 0, 0, 0
            info.mode = 0o755 if path.startswith("scripts/") else 0o644
            archive.addfile(info, io.BytesIO(files[path]))
    return gzip.compress(raw.getvalue(), compresslevel=9, mtime=0)
