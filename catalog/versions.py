"""Which version of a server is the latest: the official registry's rule.

Two semantic versions compare as semantic versions (a release above its pre-releases, pre-releases
compared as text); a semantic version is above any other; two others compare by when they were
published. The latest is the highest version that is not deleted; when every version is deleted, the
highest deleted one keeps the mark, so the server can still be read with `include_deleted`."""

import re
from datetime import datetime

from catalog.choices import Status

_SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?$")


def _semantic(version: str) -> tuple | None:
    match = _SEMVER.match(version)
    if match is None:
        return None
    major, minor, patch, prerelease = match.groups()
    # A release sorts above its pre-releases: (…, 1, "") against (…, 0, "alpha").
    return int(major), int(minor), int(patch), prerelease is None, prerelease or ""


def version_key(version: str, published_at: datetime) -> tuple:
    """A sort key: the highest key is the latest version."""
    semantic = _semantic(version)
    if semantic is not None:
        return (1, semantic, published_at)
    return (0, (), published_at)


def latest_of(versions):
    """The version that carries `isLatest` among `versions` (objects with version, published_at and
    status), or None when there are none."""
    versions = list(versions)
    candidates = [v for v in versions if v.status != Status.DELETED] or versions
    if not candidates:
        return None
    return max(candidates, key=lambda v: version_key(v.version, v.published_at))
