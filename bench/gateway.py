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
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import redis
from common import PROJECT_DIR, Serve, free_port, manage, registry_env

sys.path.insert(0, str(PROJECT_DIR))
from gateway_calls import (  # noqa: E402
    A2A_DIRECT,
    A2A_GATEWAY,
    A2A_HEADERS,
    GRANIAN,
    HEADERS,
    LIST,
    REDIS_URL,
    VIRTUAL,
    body_of,
    commands_a_call,
    first_request,
    granian_front,
    keeps_session,
    load,
    paired,
    profile,
    redis_commands,
    top_functions,
    web_processes,
)

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
                        if (
                            "registry" in name or "gateway" in name or name == VIRTUAL
                        ) and name != GRANIAN:  # serve's processes
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
