"""The local embedding model, by backend (EMBEDDINGS_BACKEND): a query never embedded before (the cost a new
semantic search pays), bulk embedding of registry-like texts (backfills, imports, mirroring), the time
to the first vector of a fresh process, and the process's RSS once the model is loaded.

Each backend runs in a fresh process of its own through `core.embeddings.LocalProvider`, the
code every surface uses; the ONNX graph is exported beforehand so neither row counts an export.

Run: .venv/bin/python bench/embeddings.py [--queries 200] [--bulk 2000] [--runs 3]
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile

from common import PROJECT_DIR

CHILD = r"""
import json, os, sys, time
import django
os.environ["DJANGO_SETTINGS_MODULE"] = "registry_site.settings.base"
django.setup()
import psutil
from core.embeddings import LocalProvider

queries, bulk = int(sys.argv[1]), int(sys.argv[2])
provider = LocalProvider()
started = time.perf_counter()
provider.embed(["warm up"])
first = time.perf_counter() - started
timings = []
for index in range(queries):
    started = time.perf_counter()
    provider.embed([f"a question never asked before, number {index}, about time zones and weather"])
    timings.append((time.perf_counter() - started) * 1000)
texts = [
    f"io.example/server-{index}: Server {index}. Forecasts, alerts and historical data for region {index}. "
    f"Tools: get_forecast(city, days), get_alerts(state), history_{index}(from, to). Tags: weather, geo"
    for index in range(bulk)
]
started = time.perf_counter()
for start in range(0, bulk, 64):
    provider.embed(texts[start : start + 64])
rate = bulk / (time.perf_counter() - started)
timings.sort()
print(json.dumps({
    "first": first, "p50": timings[len(timings) // 2], "p99": timings[int(len(timings) * 0.99)],
    "rate": rate, "rss": psutil.Process().memory_info().rss / 2**20,
}))
"""


def run(backend: str, var_dir: str, queries: int, bulk: int) -> dict:
    env = {
        "EMBEDDINGS_BACKEND": backend,
        "REGISTRY_VAR_DIR": var_dir,
        "PATH": "/usr/bin:/bin",
        "HOME": var_dir,
        "LOG_LEVEL": "WARNING",
    }
    output = subprocess.run(
        [sys.executable, "-c", CHILD, str(queries), str(bulk)],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--bulk", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as var_dir:
        run("onnx", var_dir, 1, 1)  # the export, once, outside the measured runs
        results = {backend: [] for backend in ("torch", "onnx")}
        for _ in range(args.runs):
            for backend in results:
                results[backend].append(run(backend, var_dir, args.queries, args.bulk))
    median = {b: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for b, rs in results.items()}
    torch, onnx = median["torch"], median["onnx"]
    print(f"medians of {args.runs} runs; {args.queries} new queries, {args.bulk} texts in batches of 64\n")
    print("| | torch (sentence-transformers) | onnx (ONNX Runtime) | ratio |")
    print("| --- | --- | --- | --- |")
    print(
        f"| a new query, p50 | {torch['p50']:.1f} ms | {onnx['p50']:.1f} ms | {torch['p50'] / onnx['p50']:.1f}× |"
    )
    print(
        f"| a new query, p99 | {torch['p99']:.1f} ms | {onnx['p99']:.1f} ms | {torch['p99'] / onnx['p99']:.1f}× |"
    )
    print(
        f"| bulk embedding | {torch['rate']:.0f}/s | {onnx['rate']:.0f}/s | {onnx['rate'] / torch['rate']:.1f}× |"
    )
    print(f"| first vector of a fresh process | {torch['first']:.1f} s | {onnx['first']:.1f} s | |")
    print(f"| RSS with the model loaded | {torch['rss']:.0f} MB | {onnx['rss']:.0f} MB | |")


if __name__ == "__main__":
    main()
