"""Read paths under load: GET /v0.1/servers (first page, a deep page, search=) over 10,000 servers,
GET /health and the discovery document, on the whole system as `make run` starts it. The
"new term" row sends a different search each request, so no page comes from the page cache.

The load comes from one asyncio process (aiohttp, keep-alive), so the client costs little of the two
cores it shares with the registry. Each row runs for --seconds with 1 client and with --clients.

Run: .venv/bin/python bench/read_paths.py [--servers 10000] [--seconds 8] [--clients 16]
"""

import argparse
import asyncio
import itertools
import statistics
import tempfile
import time
from pathlib import Path

import aiohttp
from common import Serve, free_port, manage, registry_env, seed_servers


async def load(url, headers: dict, clients: int, seconds: float) -> tuple[list[float], float, int]:
    """Latencies of the successful requests `clients` keep-alive clients make in `seconds`, the elapsed
    time, and how many requests failed (any status but 200). `url` is one URL or an iterator of them."""
    urls = itertools.repeat(url) if isinstance(url, str) else url
    latencies: list[float] = []
    failed = 0
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        started = time.perf_counter()
        deadline = started + seconds

        async def client():
            nonlocal failed
            while time.perf_counter() < deadline:
                sent = time.perf_counter()
                async with session.get(next(urls)) as response:
                    await response.read()
                if response.status != 200:
                    failed += 1
                    continue
                latencies.append(time.perf_counter() - sent)

        await asyncio.gather(*(client() for _ in range(clients)))
        return latencies, time.perf_counter() - started, failed


def quantile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] * 1000


def row(name: str, result: tuple[list[float], float, int]) -> str:
    latencies, elapsed, failed = result
    if len(latencies) < 2:
        return f"| {name} | {len(latencies) / elapsed:.1f} req/s | – | – | {failed} |"
    rate = len(latencies) / elapsed
    return (
        f"| {name} | {rate:.0f} req/s | {statistics.median(latencies) * 1000:.1f} ms | "
        f"{quantile(latencies, 99):.1f} ms | {failed} |"
    )


async def measure(base: str, token: str, clients: int, seconds: float) -> list[str]:
    auth = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession(headers=auth) as session:
        cursor = None
        for _ in range(50):  # walk to page 51 for a deep cursor
            params = {"limit": "100", **({"cursor": cursor} if cursor else {})}
            async with session.get(f"{base}/v0.1/servers", params=params) as response:
                cursor = (await response.json())["metadata"]["nextCursor"]
    search_urls = (
        f"{base}/v0.1/servers?limit=100&search=bench-{n:04d}" for n in itertools.cycle(range(1000))
    )
    targets = [
        ("/v0.1/servers?limit=100", f"{base}/v0.1/servers?limit=100", auth),
        ("/v0.1/servers?limit=100, page 51", f"{base}/v0.1/servers?limit=100&cursor={cursor}", auth),
        ("/v0.1/servers?limit=100&search=bench-09", f"{base}/v0.1/servers?limit=100&search=bench-09", auth),
        # 1,000 terms of 10 matches each, more than the pages a process keeps: never from the page cache.
        ("/v0.1/servers?limit=100&search=<a new term>", search_urls, auth),
        ("/health", f"{base}/health", {}),
        ("/.well-known/mcp-servers", f"{base}/.well-known/mcp-servers", {}),
    ]
    rows = []
    for name, url, headers in targets:
        await load(url, headers, 1, 1.0)  # warm-up
        rows.append(row(f"{name}, 1 client", await load(url, headers, 1, seconds)))
        rows.append(row(f"{name}, {clients} clients", await load(url, headers, clients, seconds)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--settle", type=float, default=25.0, help="seconds for the processes to warm up")
    args = parser.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="bench-var-") as tmp:
        env = registry_env(Path(tmp) / "var", port)
        manage(env, "migrate", "--verbosity", "0")
        token = seed_servers(env, args.servers)
        with Serve(env, port):
            time.sleep(args.settle)  # web processes load the embedding model in the background at start
            rows = asyncio.run(measure(f"http://127.0.0.1:{port}", token, args.clients, args.seconds))
    print(f"{args.servers} servers; {args.seconds:.0f} s per row\n")
    print("| request | throughput | median | p99 | failed |\n| --- | --- | --- | --- | --- |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
