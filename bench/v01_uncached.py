"""A /v0.1 page the process has not kept (catalog/listing.registry_page building it), over 10,000 servers:
the first page and a deep one, for an administrator, in-process. Each call asks for a page under a base URL
of its own, so none is answered from the page cache; the queries each page costs are counted.

Run: .venv/bin/python bench/v01_uncached.py [--servers 10000] [--pages 300]
"""

import argparse
import json
import tempfile
from pathlib import Path

from common import free_port, manage, registry_env, seed_servers

MEASURE = """
import json, statistics, time
from django.db import connection
from django.test.utils import CaptureQueriesContext
from accounts.choices import AuthMethod
from accounts.models import User
from accounts.principal import principal_for_user
from catalog.listing import registry_page

admin = principal_for_user(User.objects.get(username="bench-admin"), auth_method=AuthMethod.SESSION)
registry_page(admin, after=None, limit=100, base_url="https://warm.example")
deep = ("io.mcpgateway/bench-{deep}", "1.0.0")  # the middle of the servers
figures = {}
for name, after in (("first", None), ("deep", deep)):
    times = []
    for index in range({pages}):
        started = time.perf_counter()
        registry_page(admin, after=after, limit=100, base_url=f"https://p{index}.example")
        times.append((time.perf_counter() - started) * 1000)
    with CaptureQueriesContext(connection) as queries:
        page = registry_page(admin, after=after, limit=100, base_url="https://counted.example")
    assert page[1] == 100, page[1]
    times.sort()
    figures[name] = {
        "p50_ms": round(statistics.median(times), 3),
        "p99_ms": round(times[int(len(times) * 0.99) - 1], 3),
        "queries": len(queries.captured_queries),
    }
print(json.dumps(figures))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=10_000)
    parser.add_argument("--pages", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-var-") as tmp:
        env = registry_env(Path(tmp) / "var", free_port())
        manage(env, "migrate", "--verbosity", "0")
        seed_servers(env, args.servers)
        script = MEASURE.replace("{pages}", str(args.pages)).replace("{deep}", f"{args.servers // 2:05d}")
        figures = json.loads(manage(env, "shell", "-c", script).strip().splitlines()[-1])
    print(f"uncached /v0.1 page of 100 over {args.servers} servers, {args.pages} pages each:")
    for name, row in figures.items():
        print(f"  {name:5}  p50 {row['p50_ms']:.3f} ms  p99 {row['p99_ms']:.3f} ms  {row['queries']} queries")


if __name__ == "__main__":
    main()
