"""A skill's folder read from a Git repository at a ref, under the rules every fetch of the registry
obeys (core/outbound.py): the host's addresses checked before the fetch and the connection pinned to them
(`http.curloptResolve`, or the address itself for `git://`), a total deadline, a bound on the bytes
fetched, no redirects, no other protocol (`file://`, `ssh://`, `ext::` are refused), no credential
helper, no system or user Git configuration.

Only the one commit is fetched (`--depth 1`), into an empty repository of a temporary folder; nothing is
checked out, so no hook, filter or link of the repository ever runs or is followed: the tree is listed
(links and submodules refused, the count and sizes bounded before a byte is read) and each blob read."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings

from core.outbound import AddressRefused, addresses_to_reach
from skills.archives import ArchiveRefused, SkillFiles, read_folder

SCHEMES = {"https": 443, "http": 80, "git": 9418}
REF = re.compile(r"^(?!-)(?!.*\.\.)[A-Za-z0-9._/-]{1,200}$")
FOLDER = re.compile(r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$")
FETCH_FACTOR = 4  # the fetch may hold this many times SKILL_MAX_BYTES (packs of one commit, compressed)


class GitRefused(ValueError):
    """A repository, ref or fetch the registry will not use; `rule` names the rule, the text says why."""

    def __init__(self, rule: str, message: str):
        super().__init__(message)
        self.rule = rule


def read_from_git(url: str, ref: str, folder: str = "") -> tuple[SkillFiles, str]:
    """(the skill's folder `folder` of the repository at `url` at `ref`, the commit it was read at)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in SCHEMES or not parts.hostname or parts.username or parts.password:
        raise GitRefused("git_url", "A repository is an https://, http:// or git:// URL with no user in it.")
    if not REF.match(ref or ""):
        raise GitRefused(
            "git_ref", "A ref is a branch, a tag or a commit: letters, digits, '.', '_', '-', '/'."
        )
    folder = folder.strip("/")
    if folder and (not FOLDER.match(folder) or ".." in folder.split("/")):
        raise GitRefused(
            "git_folder", "The skill's folder is a path inside the repository, such as skills/pdf."
        )
    port = parts.port or SCHEMES[parts.scheme]
    try:
        addresses = addresses_to_reach(
            parts.hostname,
            port,
            allowed_hosts=settings.SKILL_SOURCE_ALLOWED_HOSTS,
            allow_loopback=settings.SKILL_SOURCE_ALLOW_LOOPBACK,
        )
    except AddressRefused as refused:
        raise GitRefused("git_url", f"{refused}.") from None
    name = folder.rsplit("/", 1)[-1] if folder else Path(parts.path).name.removesuffix(".git")
    with tempfile.TemporaryDirectory(prefix="skill-git-") as work:
        git = _Git(Path(work), deadline=time.monotonic() + settings.SKILL_SOURCE_TIMEOUT_SECONDS)
        git.run("init", "--quiet", "--bare", ".")
        git.fetch(_pinned(parts, addresses[0], port), ref)
        commit = git.run("rev-parse", "FETCH_HEAD^{commit}").decode().strip()
        files = git.tree(commit, folder)
    try:
        return read_folder(files, name), commit
    except ArchiveRefused as refused:
        raise GitRefused(refused.rule, str(refused)) from None


def _pinned(parts, address: str, port: int) -> tuple[str, list[str]]:
    """(the URL to fetch, the options that pin its host to `address`)."""
    if parts.scheme == "git":  # no TLS and no Host to keep: the address itself
        host = f"[{address}]" if ":" in address else address
        return urlunsplit(parts._replace(netloc=f"{host}:{port}")), []
    resolve = f"{parts.hostname}:{port}:{f'[{address}]' if ':' in address else address}"
    return urlunsplit(parts), ["-c", f"http.curloptResolve={resolve}"]


class _Git:
    def __init__(self, folder: Path, deadline: float):
        self.folder, self.deadline = folder, deadline
        self.environment = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(folder),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ASKPASS": "true",
            "GIT_PROTOCOL_FROM_USER": "0",
            "GIT_ALLOW_PROTOCOL": "https:http:git",
        }
        self.options = [
            "-c", "protocol.allow=never",
            "-c", "protocol.https.allow=always",
            "-c", "protocol.http.allow=always",
            "-c", "protocol.git.allow=always",
            "-c", "http.followRedirects=false",
            "-c", "credential.helper=",
            "-c", "core.hooksPath=/dev/null",
            "-c", "transfer.fsckObjects=true",
        ]  # fmt: skip

    def run(self, *arguments: str, extra: tuple[str, ...] = ()) -> bytes:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise GitRefused("git_fetch", f"no answer within {settings.SKILL_SOURCE_TIMEOUT_SECONDS} s")
        try:
            done = subprocess.run(
                ["git", *self.options, *extra, *arguments],
                cwd=self.folder,
                env=self.environment,
                capture_output=True,
                timeout=left,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise GitRefused(
                "git_fetch", f"no answer within {settings.SKILL_SOURCE_TIMEOUT_SECONDS} s"
            ) from None
        if done.returncode != 0:
            said = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise GitRefused("git_fetch", (said[-1] if said else "git failed")[:300])
        return done.stdout

    def fetch(self, pinned: tuple[str, list[str]], ref: str) -> None:
        """The one commit at `ref`, stopped when the fetched objects pass the bound."""
        url, extra = pinned
        limit = settings.SKILL_MAX_BYTES * FETCH_FACTOR
        command = ["git", *self.options, *extra, "fetch", "--quiet", "--depth", "1", "--no-tags", url, ref]
        process = subprocess.Popen(
            command, cwd=self.folder, env=self.environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            while process.poll() is None:
                if time.monotonic() > self.deadline:
                    raise GitRefused(
                        "git_fetch", f"no answer within {settings.SKILL_SOURCE_TIMEOUT_SECONDS} s"
                    )
                if _size(self.folder) > limit:
                    raise GitRefused(
                        "git_fetch", f"the repository sends more than {limit} bytes for one commit"
                    )
                time.sleep(0.05)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        if process.returncode != 0:
            said = process.stderr.read().decode("utf-8", "replace").strip().splitlines()
            raise GitRefused("git_fetch", (said[-1] if said else "git fetch failed")[:300])

    def tree(self, commit: str, folder: str) -> dict[str, bytes]:
        """Every file under `folder` at `commit`, by its path in the folder: links and submodules refused,
        the count and the sizes checked before any is read."""
        listing = self.run("ls-tree", "-r", "-l", "-z", "--full-tree", commit, "--", folder or ".")
        entries, total = [], 0
        for line in filter(None, listing.split(b"\0")):
            meta, _, path = line.partition(b"\t")
            mode, kind, sha, size = meta.split()
            name = path.decode("utf-8", "replace")
            if kind != b"blob" or mode not in (b"100644", b"100755"):
                raise GitRefused("no_links", f"{name}: links and submodules are not part of a skill.")
            total += int(size)
            if len(entries) >= settings.SKILL_MAX_FILES:
                raise GitRefused("file_count", f"A skill holds at most {settings.SKILL_MAX_FILES} files.")
            if total > settings.SKILL_MAX_BYTES:
                raise GitRefused("unpacked_size", f"A skill holds at most {settings.SKILL_MAX_BYTES} bytes.")
            entries.append((name.removeprefix(f"{folder}/") if folder else name, sha.decode()))
        if not entries:
            raise GitRefused("git_folder", f"The commit has no files under {folder or 'its root'}.")
        return {name: self.run("cat-file", "blob", sha) for name, sha in entries}


def _size(folder: Path) -> int:
    return sum(entry.stat().st_size for entry in folder.rglob("*") if entry.is_file())
