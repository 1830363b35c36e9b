"""Sustained ingestion of the metrics service: batches of 50 metrics from several concurrent senders.

Starts the whole system (`manage.py serve`) on throw-away embedded servers, makes a key with a rate
limit high enough not to interfere, then lets N sender threads post batches of 50 mixed metrics to
POST /metrics for a fixed time. Reports accepted metrics per second and the median and p99 latency of
one POST, and checks afterwards that the flush stored every accepted metric.
Run: .venv/bin/python bench/metrics_ingest.py [--senders 1 4 8] [--seconds 20]
"""

import argparse
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

import requests
from common import Serve, free_port, manage, registry_env

BATCH = 50


def payload(sender: int) -> str:
    metrics = []
    for n in range(BATCH):
        kind = n % 4
        if kind == 0:
            metrics.append(
                {
                    "type": "auth_request",
                    "value": 1,
                    "duration_ms": 3.2,
                    "dimensions": {"success": True, "method": "jwt", "server": "/weather", "user_hash": "ab"},
                }
            )
        elif kind == 1:
            metrics.append(
                {
                    "type": "tool_execution",
                    "value": 1,
                    "duration_ms": 41.0,
                    "dimensions": {"method": "tools/call", "tool_name": f"tool{n % 7}", "success": True},
                }
            )
        elif kind == 2:
            metrics.append(
                {
                    "type": "tool_discovery",
                    "value": 1,
                    "duration_ms": 18.0,
                    "dimensions": {"query": f"sender {sender} query", "results_count": 5},
                }
            )
        else:
            metrics.append(
                {
                    "type": "protocol_latency",
                    "value": 1,
                    "duration_ms": 120.0,
                    "dimensions": {"flow_step": "full_flow"},
                }
            )
    return json.dumps({"service": "bench", "version": "1.0.0", "metrics": metrics})


def run(url: str, key: str, senders: int, seconds: float) -> tuple[int, list[float], int]:
    latencies: list[list[float]] = [[] for _ in range(senders)]
    accepted = [0] * senders
    failures = [0] * senders
    stop = time.monotonic() + seconds

    def send(index: int) -> None:
        session = requests.Session()
        body = payload(index)
        headers = {"X-API-Key": key, "Content-Type": "application/json"}
        while time.monotonic() < stop:
            started = time.perf_counter()
            response = session.post(url, data=body, headers=headers, timeout=30)
            latencies[index].append(time.perf_counter() - started)
            if response.status_code in (200, 202):  # ours answers 202, the reference 200
                accepted[index] += response.json()["accepted"]
            else:
                failures[index] += 1

    threads = [threading.Thread(target=send, args=(n,)) for n in range(senders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(accepted), [x for per in latencies for x in per], sum(failures)


def stored_rows(env: dict) -> int:
    script = (
        "from metrics.models import METRIC_TABLES; "
        "print(sum(m.objects.filter(service='bench').count() for m in METRIC_TABLES.values()))"
    )
    return int(manage(env, "shell", "-c", script).strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--senders", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-metrics-") as tmp:
        port, metrics_port = free_port(), free_port()
        env = registry_env(Path(tmp) / "var", port, METRICS_SERVICE_PORT=str(metrics_port))
        print("==> migrating a fresh database", flush=True)
        manage(env, "migrate", "--verbosity", "0")
        key = manage(env, "create_metrics_key", "bench", "--rate-limit", "10000000").strip()
        url = f"http://127.0.0.1:{metrics_port}/metrics"
        print("==> starting manage.py serve (web, metrics service, exporter, worker, beat)", flush=True)
        with Serve(env, port):
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    requests.get(f"http://127.0.0.1:{metrics_port}/health", timeout=2).raise_for_status()
                    break
                except requests.RequestException:
                    time.sleep(0.2)
            total = 0
            for senders in args.senders:
                print(f"==> {senders} sender(s), batches of {BATCH}, {args.seconds:.0f} s", flush=True)
                accepted, latencies, failures = run(url, key, senders, args.seconds)
                total += accepted
                p99 = statistics.quantiles(latencies, n=100)[98] * 1000
                print(
                    f"    {accepted / args.seconds:9.0f} metrics/s  {len(latencies) / args.seconds:7.1f} batches/s  "
                    f"median {statistics.median(latencies) * 1000:6.1f} ms  p99 {p99:6.1f} ms  failures {failures}",
                    flush=True,
                )
            print("==> waiting for the flush to store everything", flush=True)
            deadline = time.monotonic() + 120
            while (rows := stored_rows(env)) < total and time.monotonic() < deadline:
                time.sleep(2)
            print(f"    accepted {total}, stored {rows}", flush=True)


if __name__ == "__main__":
    main()
