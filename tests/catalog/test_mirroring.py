"""Mirroring: a second instance of the registry on loopback (tests/catalog/peer.py), published to with
mcp-publisher's own requests, synced in full, incrementally and after a crash; and pages in the official
registry's format served from real server.json documents."""

import json
import signal
import time
from io import StringIO
from pathlib import Path

import pytest
import requests
from django.core.management import call_command

from catalog.models import ServerVersion, Upstream
from catalog.services.mirroring import UpstreamError, upstream_sync
from catalog.tasks import sync_due_upstreams_task
from tests.catalog.official_pages import OFFICIAL, OfficialPages, official_entry
from tests.catalog.peer import start_peer, stop_peer
from tests.catalog.publisher import Publisher
from tests.processes import start

pytestmark = pytest.mark.django_db(transaction=True)

SAMPLES = json.loads((Path(__file__).parents[1] / "data" / "server-json-samples.json").read_text())[
    "documents"
]


def _distinct(documents):
    seen = {}
    for document in documents:
        seen.setdefault((document.get("name"), document.get("version")), document)
    return list(seen.values())


VALID = _distinct(s["document"] for s in SAMPLES if s["valid_2025_12_11"])
INVALID = _distinct(s["document"] for s in SAMPLES if not s["valid_2025_12_11"])


@pytest.fixture(scope="module")
def peer(django_db_setup, django_db_blocker, tmp_path_factory):
    """The second instance, holding 40 real documents published with mcp-publisher's requests."""
    with django_db_blocker.unblock():
        peer, group, name = start_peer(tmp_path_factory.mktemp("peer"))
    try:
        publisher = Publisher(peer.url, peer.token)
        for document in VALID[:40]:
            answer = publisher.publish(document)
            assert answer.status_code == 200, answer.text
        yield peer
    finally:
        with django_db_blocker.unblock():
            stop_peer(group, name)


def peer_state(peer) -> dict:
    """{(name, version): (document, status, statusMessage)} of every version the peer lists."""
    state, cursor = {}, None
    while True:
        params = {"limit": 100, "include_deleted": "true"} | ({"cursor": cursor} if cursor else {})
        page = requests.get(
            f"{peer.url}/v0.1/servers",
            params=params,
            headers={"Authorization": f"Bearer {peer.token}"},
            timeout=10,
        ).json()
        for entry in page["servers"]:
            official = entry["_meta"][OFFICIAL]
            key = (entry["server"]["name"], entry["server"]["version"])
            state[key] = (entry["server"], official["status"], official.get("statusMessage", ""))
        cursor = page["metadata"].get("nextCursor")
        if not cursor:
            return state


def mirrored_state(upstream) -> dict:
    rows = ServerVersion.objects.filter(upstream=upstream)
    return {(r.name, r.version): (r.document, r.status, r.status_message) for r in rows}


def _latest_names():
    latest = ServerVersion.objects.filter(is_latest=True).values_list("name", flat=True)
    return sorted(latest), sorted(set(ServerVersion.objects.values_list("name", flat=True)))


def test_full_then_incremental_syncs_converge_with_the_peer(peer):
    upstream = Upstream.objects.create(name="peer", url=peer.url, auth_header=f"Bearer {peer.token}")

    full = upstream_sync(upstream, page_limit=7)

    assert (full.failed, full.added, full.pages) == (0, len(peer_state(peer)), -(-len(peer_state(peer)) // 7))
    assert mirrored_state(upstream) == peer_state(peer)
    latest, names = _latest_names()
    assert latest == names  # one latest version per mirrored name

    publisher = Publisher(peer.url, peer.token)
    for version in ("1.0.0", "1.1.0", "2.0.0"):
        publisher.publish(
            {"name": "com.mirror/incremental", "description": "changes upstream", "version": version}
        )
    first = VALID[0]
    assert (
        publisher.status(first["name"], first["version"], "deprecated", "Use the next one").status_code == 200
    )
    assert publisher.status("com.mirror/incremental", "2.0.0", "deleted", "Broken").status_code == 200

    incremental = upstream_sync(upstream, page_limit=7)

    assert incremental.seen <= 6  # the changes, and what changed at the very instant of the watermark
    assert (incremental.added, incremental.updated, incremental.failed) == (3, 1, 0)
    assert mirrored_state(upstream) == peer_state(peer)
    assert ServerVersion.objects.get(name=first["name"], version=first["version"]).status == "deprecated"
    deleted = ServerVersion.objects.get(name="com.mirror/incremental", version="2.0.0")
    assert (deleted.status, deleted.status_message, deleted.is_latest) == ("deleted", "Broken", False)
    assert ServerVersion.objects.get(name="com.mirror/incremental", is_latest=True).version == "1.1.0"
    assert upstream_sync(upstream).seen <= 1  # nothing new


def test_a_sync_killed_halfway_resumes_and_converges_without_duplicates(peer):
    upstream = Upstream.objects.create(name="peer", url=peer.url, auth_header=f"Bearer {peer.token}")

    class Killed(BaseException):
        pass

    def die_after_three_pages(report):
        if report.pages == 3:
            raise Killed

    with pytest.raises(Killed):
        upstream_sync(upstream, progress=die_after_three_pages, page_limit=5)
    upstream.refresh_from_db()
    assert ServerVersion.objects.count() == 15 and upstream.cursor  # three pages stored, where to go on kept

    resumed = upstream_sync(upstream, page_limit=5)

    assert resumed.seen == len(peer_state(peer)) - 15  # from the fourth page on
    assert mirrored_state(upstream) == peer_state(peer)
    assert ServerVersion.objects.count() == len(peer_state(peer))
    again = upstream_sync(upstream, page_limit=5)
    assert (again.added, again.updated) == (0, 0)


def test_published_here_names_are_not_overwritten_and_mirrored_names_are_read_only(
    peer, client, member, token_for
):
    upstream = Upstream.objects.create(name="peer", url=peer.url, auth_header=f"Bearer {peer.token}")
    local = VALID[1]
    mirrored = next(d for d in VALID[2:40] if d["name"] != local["name"])
    token = token_for(member("ada", "mcp-registry-admin"))
    publish = lambda document: client.post(  # noqa: E731
        "/v0.1/publish", document, "application/json", headers={"Authorization": f"Bearer {token}"}
    )
    assert publish(local).status_code == 200

    report = upstream_sync(upstream)

    assert {
        "name": local["name"],
        "version": local["version"],
        "reason": f"{local['name']} is published here",
    } in (report.failures)
    assert ServerVersion.objects.get(name=local["name"]).upstream is None
    refused = publish(mirrored | {"version": "99.0.0"})
    assert refused.status_code == 403
    assert refused.json()["error"]["message"] == (
        f"{mirrored['name']} is mirrored from the upstream peer; an administrator must detach it before "
        "versions can be published here."
    )


@pytest.fixture
def official():
    """Pages in the official registry's format, from real documents (and one forged in our namespace)."""
    forged = {"name": "io.mcpgateway/forged", "description": "ours?", "version": "1.0.0"}
    documents = [*VALID, *INVALID, forged]
    pages = OfficialPages(
        [official_entry(d, f"2026-03-{1 + n % 28:02d}T10:{n % 60:02d}:00Z") for n, d in enumerate(documents)]
    )
    yield pages
    pages.stop()


def test_official_pages_are_mirrored_and_bad_entries_counted_with_their_reason(official):
    out = StringIO()

    call_command(
        "mirror",
        official.url,
        "--name",
        "official",
        "--exclude",
        "io.github.g*",
        stdout=out,
        stderr=StringIO(),
    )

    upstream = Upstream.objects.get(name="official")
    excluded = [d for d in VALID if d["name"].startswith("io.github.g")]
    assert upstream.added == len(VALID) - len(excluded)
    assert upstream.failed == len([d for d in INVALID if not d["name"].startswith("io.github.g")]) + 1
    assert ServerVersion.objects.count() == len(VALID) - len(excluded)
    reasons = {failure["name"]: failure["reason"] for failure in upstream.failures}
    assert reasons["io.mcpgateway/forged"].startswith(
        "Names under io.mcpgateway/ are the servers of this registry's gateway"
    )
    assert all(
        reasons[d["name"]].startswith("Not a valid server.json: ") for d in INVALID if d["name"] in reasons
    )
    assert f"{len(VALID) - len(excluded)} added" in out.getvalue()
    assert official.requests[0] == ("/v0.1/servers", {"limit": "100", "include_deleted": "true"}, None)
    # The next sync asks only what changed since the newest updatedAt it saw.
    call_command("mirror", official.url, "--name", "official", "--exclude", "io.github.g*", stdout=StringIO())
    newest = max(entry["_meta"][OFFICIAL]["updatedAt"] for entry in official.entries)
    assert official.requests[-1][1]["updated_since"] == newest


def test_an_upstream_that_fails_is_retried_with_backoff_and_its_error_kept(free_port):
    upstream = Upstream.objects.create(name="down", url=f"http://127.0.0.1:{free_port}", interval_minutes=60)

    for _ in range(3):
        with pytest.raises(UpstreamError):
            upstream_sync(upstream)

    upstream.refresh_from_db()
    assert upstream.consecutive_failures == 3
    assert upstream.last_error.startswith(f"http://127.0.0.1:{free_port}/v0.1/servers?limit=100")
    assert "Connection refused" in upstream.last_error
    assert (
        3.5 * 60 < (upstream.next_sync_at - upstream.last_started_at).total_seconds() < 4.5 * 60
    )  # 1, 2, 4 min


def test_the_beat_syncs_the_upstreams_that_are_due(official, free_port):
    Upstream.objects.create(name="official", url=official.url)
    Upstream.objects.create(name="paused", url=f"http://127.0.0.1:{free_port}", is_enabled=False)

    outcome = sync_due_upstreams_task()

    assert list(outcome) == ["official"]
    assert outcome["official"].startswith(f"{len(VALID) + len(INVALID) + 1} seen")
    assert sync_due_upstreams_task() == {}  # not due again before its interval


def test_a_mirror_command_killed_midway_resumes_where_it_stopped(tmp_path):
    """`manage.py mirror` as a real process, killed with SIGKILL once some pages are stored."""
    entries = [official_entry(d, f"2026-04-01T00:00:{n % 60:02d}Z") for n, d in enumerate(VALID)]
    upstream = OfficialPages(entries, delay=0.3)
    Upstream.objects.create(name="slow", url=upstream.url)
    log = (tmp_path / "mirror.log").open("w")
    try:
        process = start("django", "mirror", upstream.url, "--name", "slow", "--page-size", "10", log=log)
        deadline = time.monotonic() + 60
        while not Upstream.objects.get(name="slow").cursor and time.monotonic() < deadline:
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        stored_before = ServerVersion.objects.count()

        call_command("mirror", upstream.url, "--name", "slow", stdout=StringIO(), stderr=StringIO())
    finally:
        log.close()
        upstream.stop()

    assert 0 < stored_before < len(VALID)
    resumed = [query for _, query, _ in upstream.requests if "cursor" in query]
    assert resumed and resumed[-1]["cursor"] != "0"
    assert ServerVersion.objects.count() == len(VALID)
    assert sorted(ServerVersion.objects.values_list("name", "version")) == sorted(
        (d["name"], d["version"]) for d in VALID
    )
