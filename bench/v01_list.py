"""GET /v0.1/servers?limit=100 over 10,000 servers on one web process.

Run: .venv/bin/python bench/v01_list.py [--servers 10000] [--requests 300] [--clients 8]
"""

import argparse
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests
from common import Serve, free_port, manage, ms, registry_env, seed_servers, timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="bench-var-") as tmp:
        env = registry_env(Path(tmp) / "var", port)
        manage(env, "migrate", "--verbosity", "0")
        token = seed_servers(env, args.servers)
        with Serve(env, port):
            url = f"http://127.0.0.1:{port}/v0.1/servers"
            session = requests.Session()
            session.headers["Authorization"] = f"Bearer {token}"
            time.sleep(20)  # the web process loads the embedding model in the background at start
            timed(session, url, 20, params={"limit": 100})  # warm-up
            first = timed(session, url, args.requests, params={"limit": 100})
            cursor = None
            for _ in range(50):  # walk to page 51 for a deep cursor
                body = session.get(
                    url, params={"limit": 100, **({"cursor": cursor} if cursor else {})}
                ).json()
                cursor = body["metadata"]["nextCursor"]
            deep = timed(session, url, args.requests, params={"limit": 100, "cursor": cursor})
            search = timed(session, url, args.requests // 3, params={"limit": 100, "search": "bench-09"})
            per_client = args.requests // args.clients

            def client(_):
                s = requests.Session()
                s.headers["Authorization"] = f"Bearer {token}"
                return timed(s, url, per_client, params={"limit": 100})

            started = time.perf_counter()
            with ThreadPoolExecutor(args.clients) as pool:
                concurrent = [x for chunk in pool.map(client, range(args.clients)) for x in chunk]
            elapsed = time.perf_counter() - started
    print(f"| first page, 1 client: median / p99 | {ms(first):.1f} ms / {ms(first, 99):.1f} ms |")
    print(f"| page 51 (cursor), 1 client: median / p99 | {ms(deep):.1f} ms / {ms(deep, 99):.1f} ms |")
    print(f"| search=bench-09, 1 client: median / p99 | {ms(search):.1f} ms / {ms(search, 99):.1f} ms |")
    print(f"| first page, {args.clients} clients: throughput | {len(concurrent) / elapsed:.1f} req/s |")
    print(
        f"| first page, {args.clients} clients: median / p99 | {ms(concurrent):.1f} ms / {ms(concurrent, 99):.1f} ms |"
    )


if __name__ == "__main__":
    main()
