"""POST /api/agents/discover/semantic over 10,000 agents on a real `manage.py serve`.

Every agent has its own generated skill text and is embedded by the real model through `agents_embed()`
(no reused or perturbed vectors), so the HNSW graph and the score distribution are those of real text;
the backfill time is reported too. Then: the SQL alone (HNSW plan vs exact distances, and HNSW recall),
HTTP latency through the web process, and how long a newly registered agent takes to become findable with the
worker and beat running.

Run: .venv/bin/python bench/semantic.py [--agents 10000] [--requests 300] [--clients 4]
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests
from common import PROJECT_DIR, Serve, free_port, manage, ms, registry_env

QUERIES = [
    "convert 100 dollars to euros",
    "will it rain in Paris tomorrow",
    "translate this contract into German",
    "review my pull request for security bugs",
    "schedule a meeting with the sales team",
    "write a SQL query for monthly revenue",
    "describe the objects in this photo",
    "summarize customer support tickets",
    "detect fraud in card payments",
    "forecast inventory for next quarter",
    "transcribe a podcast episode",
    "find cheap flights to Lisbon",
    "classify the sentiment of product reviews",
    "monitor Kubernetes pods for crashes",
    "extract tables from invoices",
    "recommend songs for a road trip",
]

SEED = r"""
import itertools, json, random, time
from django.contrib.auth.models import Group
from accounts.models import User
from accounts.choices import AuthMethod
from accounts.principal import principal_for_user
from accounts.services import user_token_issue
from agents.choices import Visibility
from search.services import agents_embed
from agents.models import Agent

VERBS = ["convert", "summarize", "translate", "forecast", "classify", "extract", "schedule", "monitor",
         "analyze", "generate", "detect anomalies in", "review", "optimize", "visualize", "transcribe",
         "search", "validate", "recommend", "audit", "clean", "route", "price", "tag", "archive", "draft"]
OBJECTS = ["invoices", "emails", "weather data", "currency amounts", "support tickets", "photos",
           "SQL tables", "calendar events", "pull requests", "contracts", "shipments", "song playlists",
           "card payments", "server logs", "product reviews", "flight bookings", "medical records",
           "sales leads", "tax returns", "news articles", "podcasts", "spreadsheets", "Kubernetes pods",
           "recipes", "job applications", "insurance claims", "IoT sensor readings", "legal filings",
           "marketing campaigns", "chat transcripts", "maps and routes", "stock prices", "energy meters",
           "hotel reviews", "source code", "survey answers", "web pages", "videos", "inventory", "tweets"]
CONTEXTS = ["for small businesses", "in real time", "for hospitals", "across regions", "for banks",
            "for developers", "in bulk", "for retailers", "for schools", "on a schedule"]
rng = random.Random(7)
combos = list(itertools.product(VERBS, OBJECTS, CONTEXTS))
rng.shuffle(combos)
team = Group.objects.create(name="team")
owners = [User.objects.create(username=f"owner{i}") for i in range(20)]
for owner in owners[:5]:
    owner.groups.add(team)
agents = []
for n in range({count}):
    verb, obj, ctx = combos[n % len(combos)]
    roll = rng.random()
    visibility = Visibility.PUBLIC if roll < 0.8 else Visibility.PRIVATE if roll < 0.9 else Visibility.INTERNAL
    agents.append(Agent(
        path=f"/bench-{n:05d}", name=f"{verb.capitalize()} {obj} agent {n}",
        description=f"Helps {verb} {obj} {ctx}.", url=f"http://127.0.0.1:{20000 + n % 40000}/",
        version="1.0.0", visibility=visibility, is_enabled=rng.random() < 0.95, owner=rng.choice(owners),
        tags=[obj.split()[0].lower(), ctx.split()[-1]],
        skills=[{"name": f"{verb.replace(' ', '_')}_{obj.split()[0].lower()}", "description": f"{verb} {obj} {ctx}",
                 "examples": [f"Please {verb} these {obj}"]}],
    ))
Agent.objects.bulk_create(agents, batch_size=2000)
started = time.perf_counter()
embedded = agents_embed()
embed_seconds = time.perf_counter() - started

def token(user):
    grant = user_token_issue(principal=principal_for_user(user, auth_method=AuthMethod.SESSION),
                             requested_scopes=None, expires_in_hours=2, description="bench")
    return grant.access_token

admin = User.objects.create(username="bench-admin", is_superuser=True, is_staff=True)
member = User.objects.create(username="bench-member")
member.groups.add(team)
print(json.dumps({"embedded": embedded, "embed_seconds": embed_seconds,
                  "admin": token(admin), "member": token(member)}))
"""

SQL = r"""
import json, time
from django.db import connection
from accounts.principal import ANONYMOUS
from search.selectors import AGENT, _agents_searchable, _hnsw_ef_search, _nearest, MIN_EF_SEARCH
from django.db.models import F
from pgvector.django import CosineDistance
from core.embeddings import get_provider

queries = json.loads({queries!r})
vectors = get_provider().embed(queries)
out = {"search": [], "hnsw": [], "exact": [], "recall": [], "plans": set()}
for _ in range(5):
    for vector in vectors:
        base = _agents_searchable(ANONYMOUS).filter(embedding__isnull=False).annotate(
            distance=CosineDistance("embedding", vector))
        started = time.perf_counter()
        with _hnsw_ef_search(MIN_EF_SEARCH):
            hnsw = [a.pk for a in base.order_by("distance")[:10]]
        out["hnsw"].append(time.perf_counter() - started)
        started = time.perf_counter()
        exact = [a.pk for a in base.annotate(similarity=1 - F("distance")).order_by("-similarity")[:10]]
        out["exact"].append(time.perf_counter() - started)
        started = time.perf_counter()
        _nearest(AGENT, _agents_searchable(ANONYMOUS), vector, 10)
        out["search"].append(time.perf_counter() - started)
        out["recall"].append(len(set(hnsw) & set(exact)) / 10)
        with connection.cursor() as cursor:
            sql, params = base.order_by("distance")[:10].query.sql_with_params()
            cursor.execute("EXPLAIN " + sql, params)
            out["plans"].add("HNSW index scan" if "agent_embedding_hnsw" in str(cursor.fetchall()) else "no index")
out["plans"] = sorted(out["plans"])
print(json.dumps(out))
"""

REGISTER = r"""
import time
from agents.services import agent_create, agent_toggle
agent = agent_create(actor=None, path="/{path}", name="Glacier Watch",
                     description="Tracks the retreat of alpine glaciers from satellite images",
                     url="http://127.0.0.1:9/", version="1.0.0")
agent_toggle(actor=None, agent=agent, enabled=True)
print(time.time())
"""


def post_timed(session: requests.Session, url: str, count: int, params=None, json_body=None) -> list[float]:
    """Latencies of `count` POSTs cycling through QUERIES; every answer must be a 200."""
    out = []
    for n in range(count):
        query = QUERIES[n % len(QUERIES)]
        started = time.perf_counter()
        if json_body is not None:
            response = session.post(url, json={**json_body, "query": query}, timeout=60)
        else:
            response = session.post(url, params={**(params or {}), "query": query}, timeout=60)
        out.append(time.perf_counter() - started)
        assert response.status_code == 200, response.text[:200]
    return out


def findable_after(env: dict, url: str, path: str) -> float:
    """Seconds from a registration's commit (agent_create, then enabled) to the agent being found."""
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "shell", "-c", REGISTER.replace("{path}", path)],
        cwd=PROJECT_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    session = requests.Session()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        body = session.post(
            url, params={"query": "alpine glacier retreat", "max_results": 3}, timeout=60
        ).json()
        if any(agent["path"] == f"/{path}" for agent in body["agents"]):
            found = time.time()
            break
        time.sleep(0.05)
    else:
        raise RuntimeError(f"/{path} was not findable within 120 s")
    committed = float(proc.communicate(timeout=60)[0].strip().splitlines()[-1])
    return found - committed


def row(label: str, values: list[float]) -> str:
    return f"| {label} | {ms(values):.1f} ms / {ms(values, 99):.1f} ms |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="bench-var-") as tmp:
        env = registry_env(Path(tmp) / "var", port, SEMANTIC_SEARCH_RATE_PER_MINUTE="1000000")
        manage(env, "migrate", "--verbosity", "0")
        seeded = json.loads(
            manage(env, "shell", "-c", SEED.replace("{count}", str(args.agents))).splitlines()[-1]
        )
        sql = json.loads(
            manage(env, "shell", "-c", SQL.replace("{queries!r}", repr(json.dumps(QUERIES)))).splitlines()[-1]
        )
        with Serve(env, port):
            url = f"http://127.0.0.1:{port}/api/agents/discover/semantic"
            session = requests.Session()
            started = time.perf_counter()
            post_timed(session, url, 1)
            first_search = time.perf_counter() - started  # the web process loads the model
            soon_after_start = findable_after(env, url, "glacier-early")
            post_timed(session, url, 30)  # warm-up
            anonymous = post_timed(session, url, args.requests)
            anonymous_100 = post_timed(session, url, args.requests // 3, params={"max_results": 100})
            member = requests.Session()
            member.headers["Authorization"] = f"Bearer {seeded['member']}"
            as_member = post_timed(member, url, args.requests // 3)
            admin = requests.Session()
            admin.headers["Authorization"] = f"Bearer {seeded['admin']}"
            unified = post_timed(
                admin,
                f"http://127.0.0.1:{port}/api/search/semantic",
                args.requests // 3,
                json_body={"max_results": 10},
            )

            def client(_):
                return post_timed(requests.Session(), url, args.requests // args.clients)

            started = time.perf_counter()
            with ThreadPoolExecutor(args.clients) as pool:
                concurrent = [x for chunk in pool.map(client, range(args.clients)) for x in chunk]
            elapsed = time.perf_counter() - started
            warm = findable_after(env, url, "glacier-warm")
    print(
        f"| agents embedded by `agents_embed()` (real model, batches of 64) | {seeded['embedded']} in {seeded['embed_seconds']:.1f} s ({seeded['embedded'] / seeded['embed_seconds']:.0f}/s) |"
    )
    print(f"| SQL plan chosen for anonymous top-10 | {', '.join(sql['plans'])} |")
    print(
        f"| SQL: HNSW (ef_search 100), median / p99 | {ms(sql['hnsw']):.2f} ms / {ms(sql['hnsw'], 99):.2f} ms |"
    )
    print(
        f"| SQL: exact distances, median / p99 | {ms(sql['exact']):.2f} ms / {ms(sql['exact'], 99):.2f} ms |"
    )
    print(
        f"| SQL: `_nearest` as served, median / p99 | {ms(sql['search']):.2f} ms / {ms(sql['search'], 99):.2f} ms |"
    )
    print(f"| HNSW recall@10 against exact | {sum(sql['recall']) / len(sql['recall']):.3f} |")
    print(f"| first search of a fresh web process (model load) | {first_search:.1f} s |")
    print(row("discover/semantic anonymous, max_results=10, 1 client: median / p99", anonymous))
    print(row("discover/semantic anonymous, max_results=100, 1 client: median / p99", anonymous_100))
    print(row("discover/semantic bearer (member), max_results=10: median / p99", as_member))
    print(row("search/semantic (admin, all types), max_results=10: median / p99", unified))
    print(
        f"| discover/semantic, {args.clients} clients: throughput | {len(concurrent) / elapsed:.1f} req/s |"
    )
    print(row(f"discover/semantic, {args.clients} clients: median / p99", concurrent))
    print(f"| registered → findable, just after start | {soon_after_start:.2f} s |")
    print(f"| registered → findable, warm | {warm:.2f} s |")


if __name__ == "__main__":
    main()
