"""Request benchmark for GET /health against a running `manage.py serve` (one web process).

Sequential keep-alive requests from one client, then 8 concurrent clients; bounded in count.
Run: .venv/bin/python bench/health.py [--requests 2000]
"""

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

PROJECT_DIR = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def latencies(url: str, count: int) -> list[float]:
    session = requests.Session()
    out = []
    for _ in range(count):
        started = time.perf_counter()
        response = session.get(url, timeout=10)
        out.append(time.perf_counter() - started)
        assert response.status_code == 200, response.status_code
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    port = free_port()
    url = f"http://127.0.0.1:{port}/health"
    with tempfile.TemporaryDirectory(prefix="bench-var-") as tmp:
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY")}
        env.update(REGISTRY_VAR_DIR=str(Path(tmp) / "var"), REGISTRY_PORT=str(port), LOG_LEVEL="WARNING")
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "serve"], cwd=PROJECT_DIR, env=env, stdout=subprocess.DEVNULL
        )
        try:
            deadline = time.monotonic() + 180
            while True:
                try:
                    if requests.get(url, timeout=2).status_code == 200:
                        break
                except requests.ConnectionError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("serve did not start")
                time.sleep(0.1)
            latencies(url, 100)  # warm-up
            sequential = latencies(url, args.requests)
            per_client = args.requests // args.clients
            started = time.perf_counter()
            with ThreadPoolExecutor(args.clients) as pool:
                concurrent = [
                    x
                    for chunk in pool.map(lambda _: latencies(url, per_client), range(args.clients))
                    for x in chunk
                ]
            elapsed = time.perf_counter() - started
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(60)
    ms = lambda values, q: statistics.quantiles(values, n=100)[q - 1] * 1000  # noqa: E731
    print(f"| GET /health, 1 client: median latency | {statistics.median(sequential) * 1000:.2f} ms |")
    print(f"| GET /health, 1 client: p95 latency | {ms(sequential, 95):.2f} ms |")
    print(f"| GET /health, {args.clients} clients: throughput | {len(concurrent) / elapsed:.0f} req/s |")
    print(
        f"| GET /health, {args.clients} clients: median latency | {statistics.median(concurrent) * 1000:.2f} ms |"
    )


if __name__ == "__main__":
    main()
