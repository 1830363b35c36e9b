"""The official rule for `isLatest` (catalog/versions.py)."""

import datetime as dt
from types import SimpleNamespace

import pytest

from catalog.versions import latest_of

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _v(version, minutes=0, status="active"):
    return SimpleNamespace(version=version, published_at=T0 + dt.timedelta(minutes=minutes), status=status)


@pytest.mark.parametrize(
    ("versions", "latest"),
    [
        ([_v("1.2.0"), _v("1.10.0", 1), _v("1.9.0", 2)], "1.10.0"),
        ([_v("2.0.0-rc.1", 1), _v("2.0.0")], "2.0.0"),
        ([_v("2.0.0-alpha"), _v("2.0.0-beta")], "2.0.0-beta"),
        ([_v("1.0.0"), _v("2026-06", 5)], "1.0.0"),  # a semantic version is above any other
        ([_v("nightly-a"), _v("nightly-b", 1)], "nightly-b"),  # others by when they were published
        ([_v("1.0.0"), _v("2.0.0", 1, "deleted")], "1.0.0"),  # deleted versions are passed over...
        ([_v("1.0.0", 0, "deleted"), _v("2.0.0", 1, "deleted")], "2.0.0"),  # ...unless all are deleted
        ([_v("1.0.0"), _v("3.0.0", 1, "deprecated")], "3.0.0"),
        ([_v("1.0"), _v("1.0.0.0", 1)], "1.0.0.0"),  # neither is semantic: the newer
    ],
)
def test_the_latest_version(versions, latest):
    assert latest_of(versions).version == latest


def test_no_versions_no_latest():
    assert latest_of([]) is None
