"""What the gateway's look at pinned tools costs a `tools/list` answer (gateway/messages.py): the same
50-tool answer filtered for an administrator without pins, with pins checked in full (its first sight:
every tool's definition digested), and with pins once the same answer was seen (one hash of its bytes).
In-process, the web process's own work per answer; medians of many rounds, and the ratio to no pins.

Run: .venv/bin/python bench/pins.py [--rounds 2000]
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry_site.settings.base")

import django  # noqa: E402

django.setup()

from accounts.principal import Principal  # noqa: E402
from core.tool_trust import ToolTrust  # noqa: E402
from gateway import messages  # noqa: E402
from servers.pins import definition_of, digest_of  # noqa: E402

PATH = "/m1"


def answer(count: int = 50) -> bytes:
    tools = [
        {
            "name": f"tool_{n:03d}",
            "description": f"Tool number {n}: does one thing well, with a description of ordinary length.",
            "inputSchema": {
                "type": "object",
                "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
                "required": ["query"],
            },
            "annotations": {"readOnlyHint": True},
        }
        for n in range(count)
    ]
    return json.dumps({"jsonrpc": "2.0", "id": 2, "result": {"tools": tools}}).encode()


def timed(principal: Principal, body: bytes, rounds: int, *, fresh: bool) -> list[float]:
    samples = []
    for _ in range(rounds):
        if fresh:
            messages._ADMITTED.clear()
        started = time.perf_counter()
        messages.merged_json(body, [], principal, PATH)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    rounds = parser.parse_args().rounds
    body = answer()
    tools = json.loads(body)["result"]["tools"]
    pinned = {tool["name"]: digest_of(definition_of(tool)) for tool in tools}
    plain = Principal(username="bench", auth_method=None, is_admin=True)
    trusting = plain.with_trust({PATH: ToolTrust(pinned=pinned)})
    rows = [
        ("no pins", timed(plain, body, rounds, fresh=False)),
        ("pins, first sight of the answer", timed(trusting, body, rounds, fresh=True)),
        ("pins, the answer seen before", timed(trusting, body, rounds, fresh=False)),
    ]
    base = statistics.median(rows[0][1])
    print(f"tools/list answer of 50 tools ({len(body)} bytes), {rounds} rounds\n")
    print("| filtered | p50 ms | p99 ms | added p50 ms | ratio |")
    print("|---|---|---|---|---|")
    for name, samples in rows:
        p50, p99 = statistics.median(samples), statistics.quantiles(samples, n=100)[98]
        print(f"| {name} | {p50:.3f} | {p99:.3f} | {p50 - base:+.3f} | {p50 / base:.2f} |")


if __name__ == "__main__":
    main()
