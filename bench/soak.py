"""Soak of the multi-host deployment (tests/multihost/system.py: ten namespace hosts, every role started
by the image's entry script with the production settings, Redis under Sentinel, nginx in front).

A steady mixed load runs through the balancer for `--minutes` (listing, semantic search, gateway
`tools/call` in MCP sessions, metrics ingestion, health websockets) while faults come on a schedule: a
web host killed, a worker host killed, Redis stopped for 10 s, PostgreSQL restarted, the Redis master
killed; each killed host is started again 30 s later. Every request is recorded with its time, so errors
are split into those of a fault window (in flight at any moment from the fault until 20 s after its
repair) and those outside (goal: none).

Then the sweep phase: 10,000 enabled servers are added, the MCP host starts failing, and a health check of
every server is queued (each one changes a status). The /v0.1 first page is timed at one client while
idle and while the sweep runs (goal: p99 during the sweep within 2x idle).

Report (markdown on stdout, JSON with --json): requests by kind, errors inside and outside fault windows,
metrics accepted vs stored, RSS of every process at start (after warm-up) and end, p50/p99 per kind.

Needs root (network namespaces), nginx and redis-server (`make test` installs them).
Run: sudo .venv/bin/python bench/soak.py [--minutes 10] [--clients 8] [--sockets 20] [--sweep-servers 10000]
     [--web-core]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path

import psutil
import requests

PROJECT_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_DIR))

from tests.gateway.gateway_calls import INITIALIZE  # noqa: E402
from tests.multihost.system import METRICS_SERVICE, REDIS_HOSTS, System  # noqa: E402
from tests.waiting import wait_for  # noqa: E402

GRACE_SECONDS = 20.0
SEEDED_SERVERS = 8
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
QUERIES = ["add two numbers", "echo text back", "arithmetic server", "a tool that repeats what it is given"]


class Recorder:
    def __init__(self):
        self.rows: list[
            tuple[float, str, int, float]
        ] = []  # (at, kind, status, seconds); status 0: no answer
        self.details: dict[int, str] = {}  # row index -> what an error answer said (code, request id)
        self.lock = threading.Lock()
        self.accepted = 0

    def add(self, kind: str, status: int, started: float, detail: str = "") -> None:
        with self.lock:
            if detail:
                self.details[len(self.rows)] = detail
            self.rows.append((started, kind, status, time.monotonic() - started))


def error_detail(answer) -> str:
    """The error code of an error answer (either error format) and its request id, for the report."""
    try:
        body = answer.json()
    except ValueError:
        body = {"error": answer.text[:60]}
    error = (body.get("error_code") or body.get("error")) if isinstance(body, dict) else body
    code = error.get("code", "") if isinstance(error, dict) else " ".join(str(error).split())[:60]
    return f"{code} {answer.headers.get('X-Request-ID', '')}".strip()


def timed(recorder: Recorder, kind: str, method, url: str, **kwargs):
    started = time.monotonic()
    try:
        answer = method(url, timeout=15, **kwargs)
    except (requests.RequestException, OSError) as exc:
        recorder.add(kind, 0, started, type(exc).__name__)
        return None
    detail = error_detail(answer) if answer.status_code >= 400 else ""
    recorder.add(kind, answer.status_code, started, detail)
    return answer


def client_loop(system: System, recorder: Recorder, stop: threading.Event, index: int, run: str) -> None:
    session = requests.Session()
    session.headers.update(system.auth())
    base = system.url
    path = f"/soak-{index % SEEDED_SERVERS}"
    mcp_session = None
    pending = None
    metrics_headers = {"X-API-Key": system.metrics_key}
    step = 0
    while not stop.is_set() or pending is not None:
        if stop.is_set():  # finish the batch being sent again, nothing else
            kind = "metrics"
        else:
            kind = ("listing", "search", "tools_call", "metrics")[step % 4]
        step += 1
        if kind == "listing":
            timed(recorder, kind, session.get, f"{base}/v0.1/servers?limit=30")
        elif kind == "search":
            query = QUERIES[step % len(QUERIES)]
            body = {"query": query, "max_results": 5}
            timed(recorder, kind, session.post, f"{base}/api/search/semantic", json=body)
        elif kind == "tools_call":
            if mcp_session is None:
                opened = timed(
                    recorder,
                    "tools_call",
                    session.post,
                    f"{base}{path}/mcp",
                    json=INITIALIZE,
                    headers=MCP_HEADERS,
                )
                mcp_session = (
                    opened.headers.get("mcp-session-id") if opened is not None and opened.ok else None
                )
                continue
            call = {
                "jsonrpc": "2.0",
                "id": step,
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": step, "b": 1}},
            }
            headers = {**MCP_HEADERS, "Mcp-Session-Id": mcp_session}
            answer = timed(recorder, kind, session.post, f"{base}{path}/mcp", json=call, headers=headers)
            if answer is None or not answer.ok:
                mcp_session = None  # a new session next time
        else:
            pending = pending or {
                "service": METRICS_SERVICE,
                "metrics": [
                    {"id": str(uuid.uuid4()), "type": "custom", "value": 1, "dimensions": {"run": run}}
                ],
            }
            answer = timed(
                recorder,
                "metrics",
                session.post,
                f"{system.metrics_url}/metrics",
                json=pending,
                headers=metrics_headers,
            )
            if answer is not None and answer.status_code == 202:
                with recorder.lock:
                    recorder.accepted += answer.json()["accepted"]
                pending = None
            elif answer is not None and 400 <= answer.status_code < 500 and answer.status_code != 429:
                pending = None  # refused (recorded as an error): sending it again cannot change that
            elif stop.is_set():
                time.sleep(0.5)


def sockets_loop(system: System, recorder: Recorder, stop: threading.Event, count: int) -> dict:
    """`count` websocket clients on /ws/health_status through the balancer, reconnecting when closed."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    totals = {"messages": 0, "connects": 0}
    url = f"ws://{system.address('lb')}/ws/health_status"

    async def one():
        while not stop.is_set():
            started, opened = time.monotonic(), None
            try:
                async with connect(url, open_timeout=10, close_timeout=2) as socket:
                    recorder.add("websocket", 101, started)
                    totals["connects"] += 1
                    opened = time.monotonic()
                    while not stop.is_set():
                        try:
                            await asyncio.wait_for(socket.recv(), 1)
                            totals["messages"] += 1
                        except TimeoutError:
                            continue
            except ConnectionClosed as closed:  # an open socket that ended: counted apart, by close code
                if not stop.is_set():
                    code = closed.rcvd.code if closed.rcvd else 1006  # no close frame: abnormal closure
                    recorder.add(
                        "websocket_drop" if opened else "websocket",
                        code,
                        time.monotonic() if opened else started,
                    )
                    await asyncio.sleep(1)
            except Exception:  # noqa: BLE001 - no answer to the handshake, or a socket lost without a close
                if not stop.is_set():
                    recorder.add(
                        "websocket_drop" if opened else "websocket",
                        0,
                        time.monotonic() if opened else started,
                    )
                    await asyncio.sleep(1)

    async def all_of_them():
        await asyncio.gather(*(one() for _ in range(count)))

    asyncio.run(all_of_them())
    return totals


# -- faults ------------------------------------------------------------------------------------------


def fault_schedule(system: System, minutes: float):
    """(offset seconds, name, inject, repair after seconds, repair)."""
    span = minutes * 60

    def kill(host, roles):
        return (lambda: system.kill_host(host)), (lambda: [system.start_role(host, role) for role in roles])

    web_kill, web_back = kill("web-a", ("web", "metrics"))
    worker_kill, worker_back = kill("worker-b", ("worker",))

    def redis_stop():
        for host in REDIS_HOSTS:
            system.hosts[host].stop("redis")

    def redis_start():
        for host in REDIS_HOSTS:
            if system.hosts[host].processes["redis"].poll() is not None:
                system.start_redis(host)

    def master_kill():
        system.kill_host(system.redis_master())

    def master_back():
        for host in REDIS_HOSTS:
            if system.hosts[host].processes["redis"].poll() is not None:
                system.start_redis(host)
                system.start_sentinel(host)

    return [
        (span * 0.20, "web host killed", web_kill, 30, web_back),
        (span * 0.35, "worker host killed", worker_kill, 30, worker_back),
        (span * 0.50, "Redis stopped 10 s", redis_stop, 10, redis_start),
        (span * 0.65, "PostgreSQL restarted", system.stop_postgres, 5, system.start_postgres),
        (span * 0.80, "Redis master killed", master_kill, 30, master_back),
    ]


def run_faults(system: System, schedule, started: float, stop: threading.Event, windows: list) -> None:
    for offset, name, inject, repair_after, repair in schedule:
        while time.monotonic() - started < offset:
            if stop.wait(0.5):
                return
        at = time.monotonic()
        inject()
        time.sleep(repair_after)
        repair()
        windows.append((name, at, time.monotonic() + GRACE_SECONDS))
        print(
            f"  fault: {name} at {at - started:.0f} s, repaired {time.monotonic() - at:.0f} s later",
            flush=True,
        )


# -- memory ------------------------------------------------------------------------------------------


def process_memory(system: System) -> dict[str, tuple[int, float]]:
    """host/process name -> (pid, RSS MB) of every process of every host."""
    found = {}
    for name, host in system.hosts.items():
        for pid in host.pids():
            try:
                process = psutil.Process(pid)
                label = " ".join(os.path.basename(part) for part in process.cmdline()[:4])[:60]
                found[f"{name}: {label} [{pid}]"] = (pid, process.memory_info().rss / 2**20)
            except psutil.Error:
                continue
    return found


# -- the sweep phase ---------------------------------------------------------------------------------


def sweep_phase(system: System, servers: int, seconds: float) -> dict:
    """Listing latency at one client for `seconds` idle, then for `seconds` from the start of a health sweep
    of `servers` servers that all change status."""
    script = (
        "from servers.models import Server\n"
        f"url = '{system.mcp_url}/mcp'\n"
        f"Server.objects.bulk_create([Server(path=f'/sweep-{{i:05d}}', name=f'Sweep {{i}}', proxy_pass_url=url, "
        f"is_enabled=True, health_status='healthy', embedding_dirty=False) for i in range({servers})], "
        "batch_size=2000)\n"
    )  # not embedded: embedding 10,000 servers would hold a worker's CPU through both measurements
    system.hosts["web-a"].run(
        [sys.executable, "manage.py", "shell", "-c", script], env=system.env("web-a"), timeout=600
    )
    session = requests.Session()
    session.headers.update(system.auth())
    url = f"{system.url}/v0.1/servers?limit=30"

    def measure(span: float) -> list[float]:
        times = []
        until = time.monotonic() + span
        while time.monotonic() < until:
            started = time.perf_counter()
            answer = session.get(url, timeout=30)
            times.append(time.perf_counter() - started)
            assert answer.status_code == 200, answer.text
        return times

    def unhealthy() -> int:
        return int(system.sql("SELECT count(*) FROM servers_server WHERE health_status LIKE 'unhealthy%'"))

    measure(5)  # warm
    idle = measure(seconds)
    system.mcp_control("fail", on="1")
    queued_at = time.monotonic()
    queued = session.post(f"{system.url}/api/internal/healthcheck", headers=system.basic(), timeout=120)
    assert queued.status_code == 200, queued.text
    queue_seconds = time.monotonic() - queued_at
    during = measure(seconds)
    changed = unhealthy()
    system.mcp_control("fail", on="0")
    return {
        "servers": servers,
        "idle_requests": len(idle),
        "idle_p50_ms": percentile(idle, 50) * 1000,
        "idle_p99_ms": percentile(idle, 99) * 1000,
        "sweep_requests": len(during),
        "sweep_p50_ms": percentile(during, 50) * 1000,
        "sweep_p99_ms": percentile(during, 99) * 1000,
        "queue_seconds": queue_seconds,
        "measured_seconds": seconds,
        "statuses_changed_meanwhile": changed,
    }


def cores_split(system: System) -> None:
    """Core 1 for the front (both web hosts' web processes, nginx, this process), core 0 for the rest of
    the lab (workers, beat, PostgreSQL, Redis, Sentinels, the MCP host, the metrics roles): the two cores
    as two machines, so a figure taken this way shows what the sweep moves in the web process itself."""
    front = {system.hosts[host].processes["web"].pid for host in ("web-a", "web-b")}
    front |= {process.pid for process in system.hosts["lb"].processes.values()}
    for host in system.hosts.values():
        for process in host.processes.values():
            if process.poll() is not None:
                continue
            root = psutil.Process(process.pid)
            for member in [root, *root.children(recursive=True)]:
                member.cpu_affinity([1] if process.pid in front else [0])
    for thread in psutil.Process().threads():
        os.sched_setaffinity(thread.id, {1})


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


# -- main --------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=10, help="0: only the sweep phase")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--sockets", type=int, default=20)
    parser.add_argument("--warm-up", type=float, default=60, help="seconds before the start RSS is read")
    parser.add_argument("--sweep-servers", type=int, default=10_000, help="0: no sweep phase")
    parser.add_argument(
        "--sweep-seconds", type=float, default=60, help="listing timed this long idle, then during"
    )
    parser.add_argument(
        "--web-core",
        action="store_true",
        help="the sweep phase with the web hosts' web processes, the balancer and this client on one core "
        "and every other process of the lab on the other, as on separate machines",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    # A stop by signal (a timeout, Ctrl-C) still tears the hosts down.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    # No periodic sweep: the sweep phase's idle figures are then taken with no check running, and its
    # sweep is the one it queues (the reference's idle figure had its servers disabled).
    # Eight clients share one principal: semantic search's per-caller limit (120 a minute) would refuse
    # most of their searches with 429, which is the limit working, not a failure the soak looks for.
    system = System(
        Path(tempfile.mkdtemp(prefix="registry-soak-")),
        {"HEALTH_CHECK_INTERVAL_SECONDS": "86400", "SEMANTIC_SEARCH_RATE_PER_MINUTE": "1000000"},
    )
    print("==> building the deployment", flush=True)
    system.start()
    try:
        result = soak_phase(system, args) if args.minutes else {}
        if args.sweep_servers:
            print(f"==> sweep phase: {args.sweep_servers} servers", flush=True)
            if args.web_core:
                cores_split(system)
            result["sweep"] = sweep_phase(system, args.sweep_servers, args.sweep_seconds)
        print(json.dumps(result, indent=2) if args.json else markdown(result))
    finally:
        system.stop()


def soak_phase(system: System, args) -> dict:
    """The mixed load with the faults on their schedule; the report of `report()`."""
    for index in range(SEEDED_SERVERS):
        system.register(f"/soak-{index}", name=f"Soak {index}")
    wait_for(
        lambda: (
            int(system.sql("SELECT count(*) FROM servers_server WHERE health_status = 'healthy'"))
            == SEEDED_SERVERS
        ),
        timeout=120,
        what="the seeded servers healthy",
    )
    recorder, stop, run = Recorder(), threading.Event(), uuid.uuid4().hex
    threads = [
        threading.Thread(target=client_loop, args=(system, recorder, stop, i, run), daemon=True)
        for i in range(args.clients)
    ]
    sockets_result: dict = {}
    sockets = threading.Thread(
        target=lambda: sockets_result.update(sockets_loop(system, recorder, stop, args.sockets)),
        daemon=True,
    )
    windows: list = []
    started = time.monotonic()
    schedule = fault_schedule(system, args.minutes)
    faults = threading.Thread(target=run_faults, args=(system, schedule, started, stop, windows), daemon=True)
    print(
        f"==> {args.minutes:g} minutes of load, {args.clients} clients, {args.sockets} websockets",
        flush=True,
    )
    for thread in [*threads, sockets, faults]:
        thread.start()
    time.sleep(args.warm_up)
    memory_start = process_memory(system)
    while time.monotonic() - started < args.minutes * 60:
        time.sleep(5)
    memory_end = process_memory(system)
    stop.set()
    faults.join(120)
    for thread in threads:
        thread.join(120)
    sockets.join(30)
    wait_for(
        lambda: stored(system, run) >= recorder.accepted, timeout=120, what="the accepted metrics stored"
    )
    time.sleep(3)
    return report(recorder, windows, started, memory_start, memory_end, stored(system, run), sockets_result)


def stored(system: System, run: str) -> int:
    return int(system.sql(f"SELECT count(*) FROM metrics_genericmetric WHERE dimensions->>'run' = '{run}'"))


def report(recorder, windows, started, memory_start, memory_end, stored_count, sockets_result) -> dict:
    def in_window(at: float, seconds: float) -> bool:
        """A request in flight at any moment of a window (one sent just before the fault and cut by it
        belongs to the fault)."""
        return any(begin <= at + seconds and at <= end for _, begin, end in windows)

    kinds: dict[str, dict] = defaultdict(
        lambda: {"requests": 0, "errors_in": 0, "errors_out": 0, "times": []}
    )
    statuses_out: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    outside: list[dict] = []  # every error outside the fault windows, with what it said
    for index, (at, kind, status, seconds) in enumerate(recorder.rows):
        entry = kinds[kind]
        entry["requests"] += 1
        ok = 200 <= status < 300 or (kind == "websocket" and status == 101)
        inside = in_window(at, seconds)
        if not ok:
            entry["errors_in" if inside else "errors_out"] += 1
            if not inside:
                statuses_out[kind][status] += 1
                detail = recorder.details.get(index, "")
                outside.append({"at_s": at - started, "kind": kind, "status": status, "detail": detail})
        elif not inside:
            entry["times"].append(seconds)
    rows = {
        kind: {
            "requests": entry["requests"],
            "errors_in_fault_windows": entry["errors_in"],
            "errors_outside": entry["errors_out"],
            "statuses_outside": dict(sorted(statuses_out[kind].items())),
            "p50_ms": percentile(entry["times"], 50) * 1000,
            "p99_ms": percentile(entry["times"], 99) * 1000,
        }
        for kind, entry in sorted(kinds.items())
    }
    memory = []
    for label, (_pid, rss) in sorted(memory_start.items()):
        end = memory_end.get(label)
        memory.append({"process": label, "start_mb": rss, "end_mb": end[1] if end else None})
    return {
        "minutes": (time.monotonic() - started) / 60,
        "faults": [{"name": name, "at_s": begin - started} for name, begin, _ in windows],
        "kinds": rows,
        "errors_outside": outside,
        "metrics_accepted": recorder.accepted,
        "metrics_stored": stored_count,
        "websocket_messages": sockets_result.get("messages", 0),
        "memory": memory,
    }


def markdown(result: dict) -> str:
    lines = (
        []
        if "kinds" not in result
        else [
            f"Soak: {result['minutes']:.1f} minutes; faults: "
            + ", ".join(f"{f['name']} at {f['at_s']:.0f} s" for f in result["faults"]),
            "",
            "| kind | requests | errors in fault windows | errors outside | p50 (ms) | p99 (ms) |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]
    )
    for kind, row in result.get("kinds", {}).items():
        statuses = ", ".join(
            f"{count}× {status or 'no answer'}" for status, count in row["statuses_outside"].items()
        )
        outside = f"{row['errors_outside']}" + (f" ({statuses})" if row["errors_outside"] else "")
        lines.append(
            f"| {kind} | {row['requests']} | {row['errors_in_fault_windows']} | {outside} | "
            f"{row['p50_ms']:.1f} | {row['p99_ms']:.1f} |"
        )
    for error in result.get("errors_outside", []):
        lines.append(
            f"- outside the windows at {error['at_s']:.1f} s: {error['kind']} {error['status'] or 'no answer'}"
            f" {error['detail']}"
        )
    lines += (
        []
        if "kinds" not in result
        else [
            "",
            f"Metrics accepted {result['metrics_accepted']}, stored {result['metrics_stored']}; "
            f"websocket messages received {result['websocket_messages']}.",
            "",
            "| process (host: command [pid]) | RSS after warm-up (MB) | RSS at end (MB) | change |",
            "| --- | ---: | ---: | ---: |",
        ]
    )
    for row in result.get("memory", []):
        if row["end_mb"] is None:
            lines.append(f"| {row['process']} | {row['start_mb']:.0f} | restarted | |")
        else:
            change = (row["end_mb"] - row["start_mb"]) / row["start_mb"] * 100
            lines.append(
                f"| {row['process']} | {row['start_mb']:.0f} | {row['end_mb']:.0f} | {change:+.1f} % |"
            )
    sweep = result.get("sweep")
    if sweep:
        lines += [
            "",
            f"Sweep of {sweep['servers']} servers: /v0.1 first page at 1 client, idle p50 "
            f"{sweep['idle_p50_ms']:.1f} ms / p99 {sweep['idle_p99_ms']:.1f} ms; during the sweep p50 "
            f"{sweep['sweep_p50_ms']:.1f} ms / p99 {sweep['sweep_p99_ms']:.1f} ms "
            f"({sweep['idle_requests']} and {sweep['sweep_requests']} requests; the sweep queued in "
            f"{sweep['queue_seconds']:.2f} s, {sweep['statuses_changed_meanwhile']} statuses changed in the "
            f"{sweep['measured_seconds']:.0f} s measured).",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
