"""GET /v0.1/servers?limit=100 over 10,000 servers on one web process.

Run: .venv/bin/python bench/v01_list.py [--servers 10000] [--requests 300] [--clients 8]
"""

import argparse
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests
from common import Serve, free_port, manage, ms, registry_env, timed

SEED = """
from servers.models import Server
from accounts.models import User
from accounts.choices import AuthMethod
from accounts.principal import principal_for_user
from accounts.services import user_token_issue
Server.objects.bulk_create(
    [Server(path=f"/bench-{n:05d}", name=f"Bench {n}", description="A benchmark server",
            proxy_pass_url=f"http://127.0.0.1:{10000 + n % 50000}/mcp", tags=["bench"], is_enabled=True)
     for n in range({count})], batch_size=2000)
admin = User.objects.create(username="bench-admin", is_superuser=True, is_staff=True)
grant = user_token_issue(principal=principal_for_user(admin, auth_method=AuthMethod.SESSION),
                         requested_scopes=None, expires_in_hours=2, description="bench")
print(grant.access_token)
"""


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
        token = (
            manage(env, "shell", "-c", SEED.replace("{count}", str(args.servers))).strip().splitlines()[-1]
        )
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
