"""What limits cost a gateway call (gateway/quotas.py, limits/decision.py): the decision for one
`tools/call` with no limit in force against three that apply (the caller's, the target's and the pair's,
each of one window), counted by the one Lua script in the registry's Redis. In-process on one event
loop, as the gateway runs it; medians of many rounds, and the difference; and the floor, one Redis round
trip (a PING on the connection the count uses).

Run: .venv/bin/python bench/limits.py [--rounds 5000]
"""

import argparse
import asyncio
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
from core import redis_clients  # noqa: E402
from core.targets import Target  # noqa: E402
from gateway import quotas  # noqa: E402
from limits.decision import LimitRule, Rules  # noqa: E402

CALLER = Principal(username="bench-agent", auth_method="jwt")
TARGET = Target("server", "/payments")
HUGE = 1_000_000_000


def three_limits() -> Rules:
    def rule(pk, caller_kind, caller, target_kind, target, window):
        seconds = {"second": 1, "minute": 60, "hour": 3600}[window]
        return LimitRule(
            pk,
            caller_kind,
            caller,
            target_kind,
            target,
            ((window, seconds, HUGE),),
            frozenset({"tools"}),
            False,
        )

    return Rules(
        limits=(
            rule(1, "user", "bench-agent", "", "", "second"),
            rule(2, "", "", "server", "/payments", "minute"),
            rule(3, "user", "bench-agent", "server", "/payments", "hour"),
        )
    )


async def timed(rules: Rules, rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        judged = await quotas.verdict(rules, CALLER, TARGET, {"tools": 1})
        samples.append((time.perf_counter() - started) * 1000)
        assert judged.allowed
    return samples


async def pings(rounds: int) -> list[float]:
    """The floor: one PING on the same pipelined connection the count uses."""
    pipe, samples = redis_clients.pipe(), []
    for _ in range(rounds):
        started = time.perf_counter()
        await pipe.execute("PING")
        samples.append((time.perf_counter() - started) * 1000)
    return samples


async def main(rounds: int) -> None:
    limited, none = three_limits(), Rules()
    await timed(limited, 200)  # the script loaded, the connection open
    rows = {
        "no limit": await timed(none, rounds),
        "three limits": await timed(limited, rounds),
        "a PING on the same connection": await pings(rounds),
    }
    base = statistics.median(rows["no limit"])
    print("| decision | p50 ms | p99 ms | added p50 ms |")
    print("|---|---|---|---|")
    for name, samples in rows.items():
        p50, p99 = statistics.median(samples), statistics.quantiles(samples, n=100)[98]
        print(f"| {name} | {p50:.3f} | {p99:.3f} | {p50 - base:+.3f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5000)
    asyncio.run(main(parser.parse_args().rounds))
