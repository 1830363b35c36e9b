"""What the gateway's credential resolver adds to a call, in process: `gateway_headers` for a server with
shared headers against one that needs each user's own secret and one users sign in to, once the credential
is opened and cached (every call after the first of a process and auth epoch, a sign-in's while its token
is fresh), and the first opening itself (AES-GCM and the header).

No database or network is involved in the cached path, so this measures the resolver alone, which the
end-to-end rows of `bench/gateway.py` cannot resolve below their noise.

Run: .venv/bin/python bench/credentials.py [--calls 200000] [--runs 5]
"""

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry_site.settings.test")

import django  # noqa: E402

django.setup()

from django.utils import timezone  # noqa: E402

from connections.resolver import HEADERS, gateway_headers  # noqa: E402
from connections.sealed import open_for, seal_for  # noqa: E402
from servers.models import Server  # noqa: E402
from servers.upstream_auth import secret_header  # noqa: E402


async def per_call_us(server, principal, calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        await gateway_headers(server, principal, "epoch")
    return (time.perf_counter() - started) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    now = timezone.now()
    shared = Server(
        pk=1,
        path="/shared",
        proxy_pass_url="http://127.0.0.1:9/mcp",
        updated_at=now,
        upstream_auth="shared_headers",
        headers={"X-API-Key": "operator-key"},
    )
    keyed = Server(
        pk=2,
        path="/keyed",
        proxy_pass_url="http://127.0.0.1:9/mcp",
        updated_at=now,
        upstream_auth="user_secret",
        user_secret_header="X-API-Key: {secret}",
    )
    signed = Server(
        pk=3,
        path="/signed",
        proxy_pass_url="https://127.0.0.1:9/mcp",
        updated_at=now,
        upstream_auth="user_oauth",
    )
    principal = SimpleNamespace(user=SimpleNamespace(pk=7, is_service_account=False))
    HEADERS.put((keyed.pk, keyed.updated_at, 7), "epoch", {"X-API-Key": "the-users-own-key"})
    fresh_for_an_hour = time.monotonic() + 3600
    HEADERS.put((signed.pk, signed.updated_at, 7), "epoch", {"Authorization": "Bearer t"}, fresh_for_an_hour)
    routes = {
        "shared headers": shared,
        "each user's secret (cached)": keyed,
        "each user's sign-in (cached)": signed,
    }
    rows = {name: [] for name in routes}
    for _ in range(args.runs):  # alternating, so drift of the machine falls on all alike
        for name, server in routes.items():
            rows[name].append(asyncio.run(per_call_us(server, principal, args.calls)))
    sealed, mode, origin = seal_for(
        server=keyed, user_id=7, purpose="user", values={"secret": "the-users-own-key"}
    )
    row = SimpleNamespace(user_id=7, purpose="user", mode=mode, origin=origin, sealed=sealed)
    openings = []
    for _ in range(args.runs):
        started = time.perf_counter()
        for _ in range(10_000):
            secret_header(keyed.user_secret_header, open_for(row, keyed)["secret"])
        openings.append((time.perf_counter() - started) / 10_000 * 1e6)
    print("| resolver path | median per call | runs |")
    print("| --- | --- | --- |")
    for name, values in rows.items():
        print(f"| {name} | {statistics.median(values):.2f} µs | {', '.join(f'{v:.2f}' for v in values)} |")
    print(
        f"| first call of a process and epoch: opening the sealed secret | {statistics.median(openings):.1f} µs "
        f"| {', '.join(f'{v:.1f}' for v in openings)} |"
    )
    for name in ("each user's secret (cached)", "each user's sign-in (cached)"):
        added = statistics.median(rows[name]) - statistics.median(rows["shared headers"])
        print(f"\n{name} adds {added:.2f} µs a call to shared headers ({added / 1000:.4f} ms)")


if __name__ == "__main__":
    main()
