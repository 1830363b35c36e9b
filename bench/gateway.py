"""tools/call straight to an MCP server, through the built-in gateway, through nginx `proxy_pass` alone (the
practical limit of any proxy) and through nginx with the configuration `manage.py nginx_config` writes (the
registry checks each call and hands it back to nginx), with 1 and 16 clients. The gateway also fronts the
same server with shared headers, with each user's own secret and with each user's sign-in (sealed;
opened once per process and auth epoch, a sign-in's no longer than its token is fresh), side by side, and
as one of five members of a virtual server (`/v5`, whose session the gateway keeps: its rows always open
one). Under the table: tools/list of one member (50 tools) through the plain gateway, of the same 50 tools
pinned (each listed tool checked against its approved definition: docs/trust.md), and of the whole
virtual server (5 × 50, served from the caller's cache after the first), with the first call's time.

One stateless MCP server (official SDK, JSON answers), one `manage.py serve` (WEB_CONCURRENCY web processes,
one per core) and one
nginx worker on the same machine; the same JSON-RPC `tools/call` on every route, with an admin token where
the registry checks it.

With --sessions the server keeps sessions: each client opens one (initialize, initialized) before it
calls, and every call carries its Mcp-Session-Id, as MCP hosts do (the gateway then checks that the
session belongs to the caller on every call).

Three limits against none are also measured side by side: one client calls the plain route and the limited
one in turn, pair by pair (--limits-only: that alone).

Run: .venv/bin/python bench/gateway.py [--seconds 10] [--sessions] [--limits-only]
[--profile [--profile-route NAME]]
(--profile: py-spy samples the web process during the 16-client built-in gateway row and the top
functions, by own time and by total time, are printed under the table.)
"""

import argparse
import collections
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psutil
import redis
from common import PROJECT_DIR, Serve, free_port, manage, registry_env

sys.path.insert(0, str(PROJECT_DIR))
from tests.nginx import Nginx  # noqa: E402

PROXY_PASS = """
upstream bench_upstream {{ server 127.0.0.1:{upstream}; keepalive 32; }}
server {{
    listen 127.0.0.1:{port};
    location / {{
        proxy_pass http://bench_upstream;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host 127.0.0.1:{upstream};
        proxy_buffering off;
    }}
}}
"""

SEED = """
from servers.models import Server
from accounts.models import User
from accounts.choices import AuthMethod
from accounts.principal import principal_for_user
from accounts.services import user_token_issue
from connections.services import credential_secret_connect
Server.objects.create(path="/bench", name="Bench", description="d", proxy_pass_url="{upstream}",
                      is_enabled=True)
Server.objects.create(path="/shared", name="Shared", description="d", proxy_pass_url="{upstream}",
                      is_enabled=True, upstream_auth="shared_headers", headers={"X-API-Key": "operator-key"})
keyed = Server.objects.create(path="/keyed", name="Keyed", description="d", proxy_pass_url="{upstream}",
                              is_enabled=True, upstream_auth="user_secret",
                              user_secret_header="X-API-Key: {secret}")
admin = User.objects.create(username="bench-admin", is_superuser=True, is_staff=True)
principal = principal_for_user(admin, auth_method=AuthMethod.SESSION)
credential_secret_connect(actor=principal, target=keyed, user=admin, secret="the-admins-own-key")
from datetime import timedelta
from django.utils import timezone
from connections.choices import Purpose
from connections.oauth.flow import SignedIn
from connections.oauth.tokens import Grant
from connections.services import credential_signed_in
signed = Server.objects.create(path="/signed", name="Signed", description="d", proxy_pass_url="{upstream}",
                               is_enabled=True, upstream_auth="user_oauth")
values = {"client_id": "registry", "client_secret": None, "token_endpoint": "http://127.0.0.1:9/token",
          "revocation_endpoint": None, "issuer": "http://127.0.0.1:9", "resource": "{upstream}"}
grant = Grant("the-admins-access-token", "the-admins-refresh-token", timezone.now() + timedelta(hours=2), "mcp")
credential_signed_in(actor=principal, user=admin, signed_in=SignedIn("{upstream}", "server", signed.pk,
                     admin.pk, Purpose.USER, values, grant))
from agents.models import Agent
Agent.objects.create(path="/echo-agent", name="Echo", description="d", url="{agent}", version="1",
                     protocol_version="1.0", preferred_transport="JSONRPC", is_enabled=True, visibility="public")
from servers.services.tools import tools_store
from virtual_servers.services import virtual_server_create
names = ["add"] + [f"tool_{n:02d}" for n in range(1, 50)]
for index in range(1, 6):
    member = Server.objects.create(path=f"/m{index}", name=f"Member {index}", description="d",
                                   proxy_pass_url="{upstream}", is_enabled=True)
    tools_store(member, [{"name": name} for name in names])  # what tool discovery stores at registration
    member.save()
members = [{"server": "/m1"}] + [
    {"server": f"/m{i}", "tool_settings": {name: {"alias": f"{name}_m{i}"} for name in names}}
    for i in range(2, 6)
]
virtual_server_create(actor=None, path="/v5", definition={"name": "Five", "members": members})
from servers.health import check_and_record
pinned = Server.objects.create(path="/pinned", name="Pinned", description="d", proxy_pass_url="{upstream}",
                               is_enabled=True)
check_and_record(pinned.pk)  # a real discovery: its 50 tools are pinned as the server lists them
assert pinned.tool_pins.count() == 50, "the pinned route's tools were not pinned"
Server.objects.create(path="/limited", name="Limited", description="d", proxy_pass_url="{upstream}",
                      is_enabled=True, tags=["limited"])
from limits.services import limit_set
# Each of the three reaches /limited alone (the caller's own by the server's tag): every other route has none.
for axes, per in (({"caller_kind": "user", "caller": "bench-admin", "target_kind": "tag", "target": "limited"},
                   "second"),
                  ({"target_kind": "server", "target": "/limited"}, "minute"),
                  ({"caller_kind": "user", "caller": "bench-admin", "target_kind": "server", "target": "/limited"},
                   "hour")):
    limit_set(actor=None, windows=[{"per": per, "limit": 1_000_000_000}], **axes)  # three limits, never hit
grant = user_token_issue(principal=principal, requested_scopes=None, expires_in_hours=2, description="bench",
                         admin=True)
print(grant.access_token)
"""
CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "add", "arguments": {"a": 2, "b": 3}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
SEND = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "SendMessage",
    "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}},
}
A2A_HEADERS = {"Accept": "application/json", "A2A-Version": "1.0"}
A2A_DIRECT, A2A_GATEWAY = "A2A agent direct", "A2A agent, built-in gateway"
GRANIAN = "built-in gateway, granian front"
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
VIRTUAL = "virtual server, 5 members"  # keeps sessions of its own: its rows always open one


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def open_session(http: httpx.Client, url: str) -> None:
    """initialize and initialized; later requests of `http` carry the session id."""
    opened = http.post(url, json=INITIALIZE)
    assert opened.status_code == 200, opened.text[:200]
    http.headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
    assert http.post(url, json=INITIALIZED).status_code == 202


REDIS_URL = "from django.conf import settings; print(settings.REDIS_URL)"


def redis_commands(client: redis.Redis) -> collections.Counter:
    """Commands the registry's Redis has run so far, by name (every process's, the bench's own INFO
    included)."""
    return collections.Counter(
        {
            name.removeprefix("cmdstat_"): int(stat["calls"])
            for name, stat in client.info("commandstats").items()
        }
    )


def commands_a_call(sent: collections.Counter, count: int) -> str:
    """`3.26 a call (6954 in all: GET 2.01, EVALSHA 1.00, ...)`: the commands run more than 0.05 times a call."""
    total = sum(sent.values())
    named = ", ".join(
        f"{name.upper()} {calls / count:.2f}" for name, calls in sent.most_common() if calls / count >= 0.05
    )
    return f"{total / count:.2f} a call ({total} in all{': ' + named if named else ''})"


def load(
    url: str,
    headers: dict,
    clients: int,
    seconds: float,
    sessions: bool = False,
    body: dict = CALL,
    expect: int = 0,
) -> tuple[list[float], int]:
    """`body` posted over and over by `clients` threads for `seconds`: (latencies, count). A call must
    answer 5; a list must hold `expect` tools."""
    latencies: list[float] = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def worker():
        mine = []
        with httpx.Client(headers=headers, timeout=30) as http:
            if sessions:
                open_session(http, url)
            while time.monotonic() < stop:
                started = time.perf_counter()
                response = http.post(url, json=body)
                mine.append(time.perf_counter() - started)
                assert response.status_code == 200, response.text[:200]
                if body is CALL:
                    assert '"5"' in response.text or "5" in response.json()["result"]["content"][0]["text"]
                elif body is SEND:
                    assert "TASK_STATE_COMPLETED" in response.text, response.text[:200]
                else:
                    assert len(response.json()["result"]["tools"]) == expect, response.text[:200]
        with lock:
            latencies.extend(mine)

    failures: list[BaseException] = []

    def guarded():
        try:
            worker()
        except BaseException as failure:  # noqa: BLE001 - reported below, in the main thread
            failures.append(failure)

    threads = [threading.Thread(target=guarded) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise RuntimeError(f"{url}: {failures[0]!r}")
    return latencies, len(latencies)


def keeps_session(route: str, sessions: bool) -> bool:
    """Whether a route's clients open an MCP session (an A2A agent has none)."""
    return route == VIRTUAL or (sessions and route not in (A2A_DIRECT, A2A_GATEWAY))


def body_of(route: str) -> dict:
    return SEND if route in (A2A_DIRECT, A2A_GATEWAY) else CALL


def granian_front(env: dict, redis_url: str, port: int) -> subprocess.Popen:
    """The registry's ASGI application under granian (a Rust HTTP server), as many workers as `serve`
    runs web processes, on `port`, beside `serve`'s uvicorn: the same database and Redis."""
    workers = manage(env, "shell", "-c", "from django.conf import settings; print(settings.WEB_CONCURRENCY)")
    process = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "granian"),
            "--interface",
            "asgi",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            workers.strip().splitlines()[-1],
            "--no-ws",
            "--log-level",
            "warning",
            "registry_site.asgi:application",
        ],
        cwd=PROJECT_DIR,
        env={**env, "REDIS_URL": redis_url, "DJANGO_SETTINGS_MODULE": "registry_site.settings.base"},
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.2)
    process.terminate()
    raise RuntimeError("granian did not start")


def paired(
    plain: str, limited: str, headers: dict, seconds: float, sessions: bool
) -> list[tuple[float, float]]:
    """One client calling `plain` then `limited` in turn for `seconds`: (plain, limited) latencies pair by
    pair, so the machine's drift touches both alike."""
    pairs = []
    with httpx.Client(headers=headers, timeout=30) as one, httpx.Client(headers=headers, timeout=30) as other:
        if sessions:
            open_session(one, plain)
            open_session(other, limited)
        stop = time.monotonic() + seconds
        while time.monotonic() < stop:
            timed = []
            for http, url in ((one, plain), (other, limited)):
                started = time.perf_counter()
                response = http.post(url, json=CALL)
                timed.append(time.perf_counter() - started)
                assert response.status_code == 200, response.text[:200]
            pairs.append((timed[0], timed[1]))
    return pairs


def first_request(url: str, headers: dict, sessions: bool) -> float:
    """The time of one tools/list in a new session (or none): the first a caller makes."""
    with httpx.Client(headers=headers, timeout=30) as http:
        if sessions:
            open_session(http, url)
        started = time.perf_counter()
        response = http.post(url, json=LIST)
        assert response.status_code == 200, response.text[:200]
        return time.perf_counter() - started


def web_processes(serve_pid: int) -> list[int]:
    """The pids of the web processes `manage.py serve` started (WEB_CONCURRENCY of them on one port)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
            command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        parent = int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))
        if parent == serve_pid and b"web_server" in command and b"registry_site.asgi" in command:
            found.append(int(entry))
    if not found:
        raise RuntimeError("no web process found")
    return found


def profile(pid: int, seconds: float, out: Path) -> subprocess.Popen:
    spy = Path(sys.executable).with_name("py-spy")
    if not spy.exists():
        raise SystemExit("--profile needs py-spy in the virtual environment: .venv/bin/pip install py-spy")
    return subprocess.Popen(
        [
            str(spy),
            "record",
            "--gil",  # only what holds the interpreter: the process's CPU, not its idle threads
            "-p",
            str(pid),
            "-r",
            "200",
            "-d",
            str(int(seconds)),
            "-f",
            "raw",
            "-o",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def top_functions(raw: Path, count: int = 12) -> list[str]:
    """Functions by own samples and by total samples (% of samples), from py-spy's raw (collapsed) output."""
    own, total, samples = collections.Counter(), collections.Counter(), 0
    for line in raw.read_text().splitlines():
        stack, _, number = line.rpartition(" ")
        frames = [
            frame.split(" (")[0] + " (" + frame.split(" (")[1].split(":")[0].rsplit("/", 1)[-1] + ")"
            for frame in stack.split(";")
            if " (" in frame
        ]
        if not frames:
            continue
        weight = int(number)
        samples += weight
        own[frames[-1]] += weight
        for frame in set(frames):
            total[frame] += weight
    lines = [f"own time of {samples} samples:"]
    lines += [f"  {n * 100 / samples:5.1f} %  {name}" for name, n in own.most_common(count)]
    lines += ["total time (frames under 95 % of samples, below the event loop):"]
    below = [(name, n) for name, n in total.most_common() if n < samples * 0.95]
    lines += [f"  {n * 100 / samples:5.1f} %  {name}" for name, n in below[:count]]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--profile", action="store_true", help="py-spy the web process (16 clients)")
    parser.add_argument("--profile-route", default="built-in gateway", help="the row --profile samples")
    parser.add_argument("--sessions", action="store_true", help="a server that keeps sessions")
    parser.add_argument("--limits-only", action="store_true", help="only three limits against none, paired")
    args = parser.parse_args()
    profiled: list[str] = []
    cpu: list[str] = []
    upstream_port, agent_port, port, granian_port = free_port(), free_port(), free_port(), free_port()
    upstream = subprocess.Popen(
        [
            sys.executable,
            str(PROJECT_DIR / "bench" / "gateway_upstream.py"),
            str(upstream_port),
            *(["sessions"] if args.sessions else []),
        ]
    )
    agent = subprocess.Popen(
        [sys.executable, str(PROJECT_DIR / "bench" / "agent_upstream.py"), str(agent_port)]
    )
    granian = None
    proxies: list[Nginx] = []
    rows, list_rows = [], []
    try:
        time.sleep(3)
        direct_url = f"http://127.0.0.1:{upstream_port}/mcp"
        agent_url = f"http://127.0.0.1:{agent_port}/"
        with tempfile.TemporaryDirectory(prefix="bench-var-") as tmp:
            env = registry_env(Path(tmp) / "var", port)
            manage(env, "migrate", "--verbosity", "0")
            token = (
                manage(
                    env, "shell", "-c", SEED.replace("{upstream}", direct_url).replace("{agent}", agent_url)
                )
                .strip()
                .splitlines()[-1]
            )
            proxy_port, fronted_port = free_port(), free_port()
            proxies.append(
                Nginx(
                    Path(tmp) / "proxy",
                    PROXY_PASS.format(upstream=upstream_port, port=proxy_port),
                    proxy_port,
                )
            )
            site = manage(
                env,
                "nginx_config",
                "--registry",
                f"127.0.0.1:{port}",
                "--listen",
                f"127.0.0.1:{fronted_port}",
            )
            proxies.append(Nginx(Path(tmp) / "fronted", site, fronted_port))
            for proxy in proxies:
                proxy.start()
            with Serve(env, port) as serving:  # holds the embedded Redis, whose URL a shell then reads
                redis_url = manage(env, "shell", "-c", REDIS_URL).strip().splitlines()[-1]
                redis_client = redis.Redis.from_url(redis_url)
                granian = granian_front(env, redis_url, granian_port)
                time.sleep(15)  # the web process loads the embedding model in the background at start
                auth = {**HEADERS, "Authorization": f"Bearer {token}"}
                routes = [
                    ("direct", direct_url, HEADERS),
                    ("built-in gateway", f"http://127.0.0.1:{port}/bench/mcp", auth),
                    ("gateway, shared headers", f"http://127.0.0.1:{port}/shared/mcp", auth),
                    ("gateway, each user's secret", f"http://127.0.0.1:{port}/keyed/mcp", auth),
                    ("gateway, each user's sign-in", f"http://127.0.0.1:{port}/signed/mcp", auth),
                    ("gateway, three limits", f"http://127.0.0.1:{port}/limited/mcp", auth),
                    (VIRTUAL, f"http://127.0.0.1:{port}/v5/mcp", auth),
                    ("nginx proxy_pass", f"http://127.0.0.1:{proxy_port}/mcp", HEADERS),
                    ("nginx + registry check", f"http://127.0.0.1:{fronted_port}/bench/mcp", auth),
                    (GRANIAN, f"http://127.0.0.1:{granian_port}/bench/mcp", auth),
                    (A2A_DIRECT, agent_url, A2A_HEADERS),
                    (A2A_GATEWAY, f"http://127.0.0.1:{port}/echo-agent/a2a", {**auth, **A2A_HEADERS}),
                ]
                for name, url, headers in routes:
                    load(url, headers, 1, 2, keeps_session(name, args.sessions), body_of(name))  # warm-up
                pairs = paired(routes[1][1], routes[5][1], auth, args.seconds * 4, args.sessions)
                if args.limits_only:
                    routes, clients_counts = [], ()
                else:
                    clients_counts = (1, 16)
                lists = [
                    ("tools/list, built-in gateway (50 tools)", f"http://127.0.0.1:{port}/m1/mcp", 50),
                    ("tools/list, pinned tools (50 tools)", f"http://127.0.0.1:{port}/pinned/mcp", 50),
                    (f"tools/list, {VIRTUAL} (250 tools)", f"http://127.0.0.1:{port}/v5/mcp", 250),
                ]
                for clients in clients_counts:
                    for name, url, headers in routes:
                        spy = None
                        if args.profile and clients == 16 and name == args.profile_route:
                            raw = Path(tempfile.gettempdir()) / "gateway-profile.txt"
                            spy = profile(web_processes(serving.proc.pid)[0], args.seconds, raw)
                        webs = [psutil.Process(pid) for pid in web_processes(serving.proc.pid)]
                        before = sum(sum(web.cpu_times()[:2]) for web in webs)
                        commands = redis_commands(redis_client)
                        keeps = keeps_session(name, args.sessions)
                        latencies, count = load(url, headers, clients, args.seconds, keeps, body_of(name))
                        rows.append((clients, name, latencies, count))
                        if "registry" in name or "gateway" in name or name == VIRTUAL:
                            used = sum(sum(web.cpu_times()[:2]) for web in webs) - before
                            sent = redis_commands(redis_client) - commands
                            cpu.append(
                                f"web process CPU, {name}, {clients} clients: "
                                f"{used * 1000 / count:.2f} ms a call, {used / args.seconds:.2f} cores; "
                                f"Redis commands {commands_a_call(sent, count)}"
                            )
                        if spy is not None:
                            spy.wait(30)
                            profiled = top_functions(raw)
                for name, url, expect in lists if clients_counts else ():
                    keeps = args.sessions or VIRTUAL in name
                    first = first_request(url, auth, keeps)  # a cold cache
                    for clients in (1, 16):
                        latencies, count = load(url, auth, clients, args.seconds, keeps, LIST, expect)
                        list_rows.append((clients, name, first, latencies, count))
    finally:
        for proxy in proxies:
            proxy.stop()
        for process in (upstream, agent, granian):
            if process is not None:
                process.terminate()
                process.wait(10)
    print("| clients | route | p50 | p99 | req/s | p50 overhead | throughput vs direct |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    direct = {}
    for clients, name, latencies, count in rows:
        p50, p99 = statistics.median(latencies) * 1000, statistics.quantiles(latencies, n=100)[98] * 1000
        if name in ("direct", A2A_DIRECT):
            direct[(clients, name == A2A_DIRECT)] = (p50, count)
        base50, base_count = direct[(clients, name in (A2A_DIRECT, A2A_GATEWAY))]
        print(
            f"| {clients} | {name} | {p50:.2f} ms | {p99:.2f} ms | {count / args.seconds:.0f} "
            f"| {p50 - base50:+.2f} ms | {count / base_count:.2f} |"
        )
    proxy_pass = {clients: count for clients, name, _, count in rows if name == "nginx proxy_pass"}
    gateway = {clients: count for clients, name, _, count in rows if name == "built-in gateway"}
    for clients in sorted(gateway):
        print(
            f"built-in gateway / nginx proxy_pass throughput, {clients} clients: "
            f"{gateway[clients] / proxy_pass[clients]:.2f}"
        )
    front = {clients: count for clients, name, _, count in rows if name == GRANIAN}
    for clients in sorted(front):
        print(
            f"granian front / uvicorn front throughput, {clients} clients: {front[clients] / gateway[clients]:.2f}"
        )
    medians = {(clients, name): statistics.median(latencies) * 1000 for clients, name, latencies, _ in rows}
    for clients in sorted(gateway):
        limited = medians[(clients, "gateway, three limits")] - medians[(clients, "built-in gateway")]
        print(f"three limits against none, {clients} clients: {limited:+.2f} ms p50")
    plain, limited = ([pair[n] * 1000 for pair in pairs] for n in (0, 1))
    differences = [(b - a) * 1000 for a, b in pairs]
    print(
        f"three limits against none, side by side (1 client, {len(pairs)} pairs): "
        f"p50 {statistics.median(limited):.3f} ms against {statistics.median(plain):.3f} ms, "
        f"median of the pairs' differences {statistics.median(differences):+.3f} ms"
    )
    print("\n| clients | tools/list | first | p50 | p99 | req/s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for clients, name, first, latencies, count in list_rows:
        p50, p99 = statistics.median(latencies) * 1000, statistics.quantiles(latencies, n=100)[98] * 1000
        print(
            f"| {clients} | {name} | {first * 1000:.2f} ms | {p50:.2f} ms | {p99:.2f} ms | {count / args.seconds:.0f} |"
        )
    print("\n".join(cpu + profiled))


if __name__ == "__main__":
    main()
