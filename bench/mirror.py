"""Mirroring a whole upstream: `manage.py mirror` of 10,000 entries (crawl and store), then embedding them
for semantic search, then an incremental sync of 100 changes; and the listing and search while a full sync
runs beside them.

The upstream is a page server in this process speaking the official registry's format (its `_meta`,
cursors and `updated_since`; tests/catalog/official_pages.py, which the mirroring tests use too), its
entries made from the real server.json documents of tests/data/server-json-samples.json with names and
descriptions varied, so that the benchmark measures this registry alone.

Run: .venv/bin/python bench/mirror.py [--entries 10000] [--changes 100] [--runs 1]
"""

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests
from common import PROJECT_DIR, Serve, free_port, manage, ms, registry_env, seed_servers, timed

sys.path.insert(0, str(PROJECT_DIR))
from tests.catalog.official_pages import OFFICIAL, OfficialPages, official_entry  # noqa: E402

SAMPLES = PROJECT_DIR / "tests" / "data" / "server-json-samples.json"
WORDS = "weather maps git postgres slack calendar search files browser translate invoices tickets".split()


def upstream_entries(count: int) -> list[dict]:
    documents = [s["document"] for s in json.loads(SAMPLES.read_text())["documents"] if s["valid_2025_12_11"]]
    entries = []
    for n in range(count):
        document = json.loads(json.dumps(documents[n % len(documents)]))
        namespace, _, name = document["name"].partition("/")
        document["name"] = f"{namespace}/{name[:150]}-{n}"
        topic = f"{WORDS[n % len(WORDS)]} and {WORDS[(n * 7) % len(WORDS)]}"
        document["description"] = f"Server {n} for {topic}."[:100]
        entries.append(official_entry(document, "2026-01-01T00:00:00.000000Z"))
    return entries


def change(upstream: OfficialPages, count: int, round_: int) -> None:
    """`count` entries change upstream: a new description, and every fifth one deprecated."""
    stamp = f"2026-02-{round_:02d}T00:00:00.000000Z"
    with upstream.lock:
        for n in range(count):
            index = (n * 97 + round_) % len(upstream.entries)
            entry = json.loads(json.dumps(upstream.entries[index]))
            entry["server"]["description"] = f"Changed in round {round_}: {n}"
            entry["_meta"][OFFICIAL].update(updatedAt=stamp, status="deprecated" if n % 5 == 0 else "active")
            upstream.entries[index] = entry


def mirror(env: dict, url: str) -> float:
    """Seconds of the sync itself, as `manage.py mirror` reports it."""
    out = manage(env, "mirror", url, "--name", "bench")
    return float(re.search(r"in ([0-9.]+) s:", out).group(1))


EMBED = """
import time
from search.services import versions_embed
from core.embeddings import get_provider
get_provider().embed(["warm up"])
started = time.perf_counter()
count = versions_embed()
print(count, time.perf_counter() - started)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--changes", type=int, default=100)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    results = {"sync": [], "embed": [], "embedded": [], "incremental": []}
    for _ in range(args.runs):
        upstream = OfficialPages(upstream_entries(args.entries))
        with tempfile.TemporaryDirectory(prefix="bench-var-") as tmp:
            port = free_port()
            env = registry_env(Path(tmp) / "var", port)
            manage(env, "migrate", "--verbosity", "0")
            token = seed_servers(env, 1000)
            with Serve(env, port):
                session = requests.Session()
                session.headers["Authorization"] = f"Bearer {token}"
                url = f"http://127.0.0.1:{port}/v0.1/servers"
                time.sleep(20)  # the web process loads the embedding model in the background at start
                timed(session, url, 20, params={"limit": 100})
                idle_list = timed(session, url, 200, params={"limit": 100})
                idle_search = timed(session, url, 100, params={"limit": 100, "search": "bench-09"})
                busy_list, busy_search = [], []
                sync = subprocess.Popen(
                    [sys.executable, "manage.py", "mirror", upstream.url, "--name", "bench"],
                    cwd=PROJECT_DIR,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                )
                while sync.poll() is None:
                    # Uncached answers, as after every page a sync stores: each page moves the listings' epoch.
                    busy_list += timed(session, url, 5, params={"limit": 100})
                    busy_search += timed(session, url, 2, params={"limit": 100, "search": "bench-09"})
                out = sync.stdout.read()
                results["sync"].append(float(re.search(r"in ([0-9.]+) s:", out).group(1)))
            count, seconds = manage(env, "shell", "-c", EMBED).strip().splitlines()[-1].split()
            results["embedded"].append(int(count))
            results["embed"].append(float(seconds))
            for round_ in range(1, 4):
                change(upstream, args.changes, round_)
                results["incremental"].append(mirror(env, upstream.url))
        upstream.stop()
    sync, embed = statistics.median(results["sync"]), statistics.median(results["embed"])
    report = {
        "entries": args.entries,
        "full sync (crawl, check, store), s": round(sync, 1),
        "entries stored per second": round(args.entries / sync),
        "embedding the latest versions, s": round(embed, 1),
        "embedded per second": round(results["embedded"][0] / embed),
        "full mirror (sync + embed), s": round(sync + embed, 1),
        f"incremental sync of {args.changes} changes, s (median of {len(results['incremental'])})": round(
            statistics.median(results["incremental"]), 2
        ),
        "listing p50 idle / during the sync, ms": (round(ms(idle_list), 2), round(ms(busy_list), 2)),
        "search p50 idle / during the sync, ms": (round(ms(idle_search), 2), round(ms(busy_search), 2)),
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
