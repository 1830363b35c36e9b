"""Every sync ends, whatever the upstream does, and says why: cursors that never end, repeat or run in a
cycle, a cursor refused with 400, pages sent at a drip, a sync longer than its time. An entry that cannot
be read (an impossible date) is skipped and counted with its reason; one upstream's failure never stops
another's sync."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from catalog.models import ServerVersion, Upstream
from catalog.services.mirroring import UpstreamError, upstream_sync
from catalog.tasks import sync_due_upstreams_task
from tests.catalog.official_pages import OFFICIAL, OfficialPages, official_entry
from tests.drip import DripServer

pytestmark = pytest.mark.django_db(transaction=True)


def _document(n: int) -> dict:
    return {
        "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
        "name": f"com.example/server-{n}",
        "description": f"Server {n}",
        "version": "1.0.0",
    }


class Scripted:
    """An upstream answering each request with `answer(query)` -> (status, page), after `delay` s."""

    def __init__(self, answer, delay: float = 0.0):
        self.queries = []
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                query = {key: values[0] for key, values in parse_qs(urlsplit(self.path).query).items()}
                scripted.queries.append(query)
                time.sleep(delay)
                status, page = answer(query)
                body = json.dumps(page).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def upstream_of():
    started = []

    def make(answer, delay: float = 0.0, name: str = "hostile"):
        scripted = Scripted(answer, delay)
        started.append(scripted)
        return scripted, Upstream.objects.create(name=name, url=scripted.url, interval_minutes=60)

    yield make
    for scripted in started:
        scripted.stop()


def _page(n: int, cursor: str | None) -> dict:
    stamp = f"2026-05-01T00:00:{n % 60:02d}Z"
    page = {"servers": [official_entry(_document(n), stamp)], "metadata": {"count": 1}}
    if cursor is not None:
        page["metadata"]["nextCursor"] = cursor
    return page


def endless(query):
    n = int(query.get("cursor", "0"))
    return 200, _page(n, str(n + 1))


def test_a_cursor_that_never_ends_stops_at_the_page_bound_and_resumes_later(upstream_of, settings):
    settings.MIRROR_SYNC_MAX_PAGES = 5
    scripted, upstream = upstream_of(endless)

    report = upstream_sync(upstream)
    upstream.refresh_from_db()
    again = upstream_sync(upstream)

    assert (report.pages, report.stopped) == (5, "stopped after 5 pages (MIRROR_SYNC_MAX_PAGES)")
    assert (
        upstream.last_outcome
        == "stopped after 5 pages (MIRROR_SYNC_MAX_PAGES); the next sync resumes from the cursor"
    )
    assert upstream.consecutive_failures == 0
    assert 59 * 60 < (upstream.next_sync_at - upstream.last_synced_at).total_seconds() <= 60 * 60
    assert again.pages == 5 and scripted.queries[5]["cursor"] == "5"  # resumed where it stopped
    assert ServerVersion.objects.count() == 10


def test_the_entry_bound_and_the_time_bound_stop_a_sync_too(upstream_of, settings):
    settings.MIRROR_SYNC_MAX_ENTRIES = 3
    _, counted = upstream_of(endless, name="counted")
    by_entries = upstream_sync(counted)
    settings.MIRROR_SYNC_MAX_ENTRIES = 100_000
    settings.MIRROR_SYNC_MAX_SECONDS = 1
    _, slow = upstream_of(endless, delay=0.3, name="slow")

    started = time.monotonic()
    by_time = upstream_sync(slow)

    assert by_entries.stopped == "stopped after 3 entries (MIRROR_SYNC_MAX_ENTRIES)"
    assert by_time.stopped == "stopped after 1 s (MIRROR_SYNC_MAX_SECONDS)"
    assert time.monotonic() - started < 3


@pytest.mark.parametrize(
    "cursors",
    [{"0": "x", "x": "x"}, {"0": "a", "a": "b", "b": "a"}],
    ids=["repeated", "cycle"],
)
def test_a_cursor_cycle_fails_the_sync_with_its_reason(upstream_of, cursors):
    def answer(query):
        cursor = query.get("cursor", "0")
        return 200, _page(len(cursor), cursors[cursor])

    _, upstream = upstream_of(answer)

    with pytest.raises(UpstreamError, match="cursors run in a cycle"):
        upstream_sync(upstream)

    upstream.refresh_from_db()
    assert upstream.consecutive_failures == 1
    assert upstream.last_error.startswith("the upstream's cursors run in a cycle")
    assert upstream.cursor == ""  # the next sync starts the crawl again


def test_an_upstream_refusing_its_own_cursors_restarts_once_then_fails(upstream_of):
    def answer(query):
        if "cursor" in query:
            return 400, {"error": "bad cursor"}
        return 200, _page(0, "next")

    scripted, upstream = upstream_of(answer)

    with pytest.raises(UpstreamError, match="refused the cursor of its own first page"):
        upstream_sync(upstream)

    assert len(scripted.queries) == 4  # first page, its cursor refused, first page again, refused again


def test_a_page_at_a_drip_is_cut_at_the_page_deadline(settings):
    settings.MIRROR_PAGE_TIMEOUT_SECONDS = 1
    drip = DripServer(interval=0.2, for_seconds=30)
    upstream = Upstream.objects.create(name="drip", url=drip.url("").rstrip("/"))
    started = time.monotonic()
    try:
        with pytest.raises(UpstreamError, match="no whole answer within 1 s"):
            upstream_sync(upstream)
    finally:
        drip.stop()

    assert time.monotonic() - started < 3
    upstream.refresh_from_db()
    assert upstream.last_outcome == "failed after 0 pages"


UNREADABLE = {
    "2026-02-30T00:00:00Z": "'2026-02-30T00:00:00Z'",
    "yesterday": "'yesterday'",
    "2026-05-01T00:00:00": "'2026-05-01T00:00:00'",
    "0001-01-01T00:00:00+01:00": "'0001-01-01T00:00:00+01:00'",
}


@pytest.mark.parametrize("field", ["updatedAt", "publishedAt", "statusChangedAt"])
def test_entries_with_unreadable_dates_are_skipped_with_their_reason(upstream_of, field):
    entries = [official_entry(_document(n), "2026-05-01T00:00:00Z") for n in range(len(UNREADABLE) + 2)]
    for entry, value in zip(entries, UNREADABLE, strict=False):
        entry["_meta"][OFFICIAL][field] = value
    entries[-2]["_meta"][OFFICIAL][field] = "2026-05-01T10:00:00+23:00"  # readable: stored in UTC
    _, upstream = upstream_of(lambda query: (200, {"servers": entries, "metadata": {"count": len(entries)}}))

    report = upstream_sync(upstream)

    assert (report.added, report.failed) == (2, len(UNREADABLE))
    reasons = sorted(failure["reason"] for failure in report.failures)
    assert reasons == sorted(
        f"_meta.{OFFICIAL}.{field} is not an RFC 3339 date-time: {shown}" for shown in UNREADABLE.values()
    )
    upstream.refresh_from_db()
    assert upstream.consecutive_failures == 0 and upstream.failed == len(UNREADABLE)


def test_one_upstreams_failure_never_stops_another_sync(upstream_of, settings):
    settings.MIRROR_PAGE_TIMEOUT_SECONDS = 1
    drip = DripServer(interval=0.2, for_seconds=30)
    Upstream.objects.create(name="a-drip", url=drip.url("").rstrip("/"))
    upstream_of(lambda query: (200, {"servers": "not a list"}), name="b-broken")
    fine = OfficialPages([official_entry(_document(1), "2026-05-01T00:00:00Z")])
    Upstream.objects.create(name="c-fine", url=fine.url)
    try:
        outcome = sync_due_upstreams_task()
    finally:
        drip.stop()
        fine.stop()

    assert sorted(outcome) == ["a-drip", "b-broken", "c-fine"]
    assert outcome["a-drip"].startswith("failed: ") and outcome["b-broken"].startswith("failed: ")
    assert outcome["c-fine"] == "1 seen, 1 added, 0 updated"
    assert ServerVersion.objects.filter(upstream__name="c-fine").count() == 1
