"""One health sweep over 1,000 registered servers (half up, half down) through a real Celery worker.

The up servers are real MCP servers (the `mcp` SDK's `MCPServer` over streamable HTTP, served by
uvicorn in a few separate processes, one loopback port per registered server); the down servers are
loopback ports bound but never listening, so connecting is refused. With `--silent N`, N of the down
servers instead accept the connection and never answer, so their checks run into the timeout.

A throw-away registry on its own embedded PostgreSQL and Redis (a temporary REGISTRY_VAR_DIR) is
migrated and seeded in this process, each up server with the tools it lists already stored (a registry
after its first sweep; `--discover` registers them without, and times that first sweep apart). For each
worker concurrency asked for, a `celery -A registry_site worker` is started and warmed up; then
`servers.sweep_health_task` is sent through the broker (as beat sends it) `--runs` times, each sweep
timed from that moment until every server's `last_checked_at` is past it (or, if checks expired in the
queue, until no task is left). Takes about 10 minutes with the defaults.

Run: .venv/bin/python bench/sweep.py [--servers 1000] [--runs 3] [--concurrency 2 8] [--silent 0]
                                     [--timeout 10] [--interval 300] [--discover] [--mcp-processes 4]
"""

import argparse
import ctypes
import itertools
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import psutil

PROJECT_DIR = Path(__file__).resolve().parent.parent
LOOPBACK = "127.0.0.1"
SWEEP_TIMEOUT_SECONDS = 900
PROGRESS_EVERY_SECONDS = 5.0


def _die_with_parent() -> None:
    """In a child, before exec: SIGTERM when this benchmark dies, however it dies (Linux)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def say(text: str) -> None:
    print(text, flush=True)


# --- the MCP server processes (this file, run with --mcp-server) -----------------------------------


def mcp_server_main(ports: int) -> None:
    """Serve one MCPServer (tools `current_time` and `add`) on `ports` loopback ports; print the ports."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    import uvicorn
    from mcp.server import MCPServer

    server = MCPServer("Bench Time", log_level="WARNING")

    @server.tool()
    def current_time(timezone: str) -> str:
        """Return the current time in an IANA timezone."""
        return datetime.now(ZoneInfo(timezone)).isoformat()

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    sockets = []
    for _ in range(ports):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((LOOPBACK, 0))
        sockets.append(sock)
    config = uvicorn.Config(
        server.streamable_http_app(), log_level="warning", access_log=False, timeout_graceful_shutdown=1
    )
    print(json.dumps([sock.getsockname()[1] for sock in sockets]), flush=True)
    uvicorn.Server(config).run(sockets=sockets)


class McpServers:
    """`processes` MCP server processes sharing `ports` loopback ports between them."""

    def __init__(self, processes: int, ports: int):
        self.procs: list[subprocess.Popen] = []
        self.ports: list[int] = []
        per_process = [ports // processes + (1 if i < ports % processes else 0) for i in range(processes)]
        for count in per_process:
            proc = subprocess.Popen(
                [sys.executable, __file__, "--mcp-server", str(count)],
                cwd=PROJECT_DIR,
                stdout=subprocess.PIPE,
                text=True,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
            self.procs.append(proc)
        try:
            for proc in self.procs:
                self.ports += json.loads(proc.stdout.readline())
        except ValueError:
            self.stop()
            raise RuntimeError("an MCP server process did not start; its error is above") from None

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 30
        for port in self.ports:
            while True:
                try:
                    socket.create_connection((LOOPBACK, port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"MCP server on port {port} did not start") from None
                    time.sleep(0.05)

    def stop(self) -> None:
        stop_processes(self.procs)


class SilentPorts:
    """Loopback ports that accept connections and never answer: one thread polls them all."""

    def __init__(self, count: int):
        self.socks = []
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((LOOPBACK, 0))
            sock.listen(64)
            sock.setblocking(False)
            self.socks.append(sock)
        self.ports = [sock.getsockname()[1] for sock in self.socks]
        self.held: list[socket.socket] = []
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, name="silent-ports", daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            for sock in self.socks:
                try:
                    conn, _ = sock.accept()
                except BlockingIOError:
                    continue
                except OSError:
                    return
                self.held.append(conn)
            self._stop.wait(0.02)

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(timeout=5)
        for sock in self.held + self.socks:
            sock.close()


def stop_processes(procs: list[subprocess.Popen], timeout: float = 15) -> None:
    """SIGTERM each process group, SIGKILL what is left after `timeout`."""
    for proc in procs:
        _signal_group(proc, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for proc in procs:
        try:
            proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for proc in procs:
        _signal_group(proc, signal.SIGKILL)  # also reaps a Celery worker's pool processes
        proc.wait()


def _signal_group(proc: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(proc.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU of these processes and all their live descendants."""
    total = 0.0
    for pid in pids:
        try:
            root = psutil.Process(pid)
            for proc in [root, *root.children(recursive=True)]:
                try:
                    times = proc.cpu_times()
                    total += times.user + times.system
                except psutil.NoSuchProcess:
                    pass
        except psutil.NoSuchProcess:
            pass
    return total


# --- the registry side (Django in this process) ----------------------------------------------------


def django_setup(var_dir: Path, timeout: int, interval: int) -> None:
    for name in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY", "JWT_SIGNING_KEY"):
        os.environ.pop(name, None)
    os.environ.update(
        REGISTRY_VAR_DIR=str(var_dir),
        LOG_LEVEL="WARNING",
        HEALTH_CHECK_TIMEOUT_SECONDS=str(timeout),
        HEALTH_CHECK_INTERVAL_SECONDS=str(interval),
        DJANGO_SETTINGS_MODULE="registry_site.settings.base",
    )
    sys.path.insert(0, str(PROJECT_DIR))
    import django

    django.setup()  # starts the embedded PostgreSQL and Redis under var_dir; this process holds them


def seed(up_urls: list[str], down_urls: list[str], tools: list[dict] | None) -> None:
    """Register every server enabled and unchecked, up and down interleaved (the sweep goes by id).

    With `tools`, each up server already has them stored, as a registry has after its first sweep, so
    a sweep finds its tool list unchanged and writes no tool rows and queues no embedding; without,
    the first sweep discovers them."""
    from servers.choices import HealthStatus, Transport
    from servers.models import Server, Tool

    urls = [url for pair in itertools.zip_longest(up_urls, down_urls) for url in pair if url is not None]
    up = set(up_urls)
    servers = Server.objects.bulk_create(
        [
            Server(
                path=f"/bench-{n:04d}",
                name=f"Bench {n}",
                description="A benchmark server",
                proxy_pass_url=url,
                supported_transports=[Transport.STREAMABLE_HTTP],
                tags=["bench"],
                is_enabled=True,
                health_status=HealthStatus.UNKNOWN,
                num_tools=len(tools) if tools and url in up else 0,
                embedding_dirty=not tools,
            )
            for n, url in enumerate(urls, start=1)
        ],
        batch_size=1000,
    )
    if tools:
        Tool.objects.bulk_create(
            [
                Tool(server=server, embedding_dirty=False, **tool)
                for server in servers
                if server.proxy_pass_url in up
                for tool in tools
            ],
            batch_size=2000,
        )


class Worker:
    """`celery -A registry_site worker` with the given concurrency, on the registry this process holds."""

    def __init__(self, concurrency: int, log_path: Path, log_level: str):
        from django.conf import settings

        self.concurrency = concurrency
        self.hostname = f"sweep-bench-c{concurrency}@localhost"
        self.log_path = log_path
        env = {
            **os.environ,
            # the worker joins the embedded servers this process holds, as `manage.py serve` children do
            "DATABASE_URL": settings.DATABASE_URL,
            "REDIS_URL": settings.REDIS_URL,
            "SECRET_KEY": settings.SECRET_KEY,
            "JWT_SIGNING_KEY": settings.JWT_SIGNING_KEY,
            "LOG_LEVEL": log_level,
            "PYTHONUNBUFFERED": "1",
        }
        argv = [
            *(sys.executable, "-m", "celery", "-A", "registry_site", "worker"),
            *("--loglevel", log_level, "--concurrency", str(concurrency), "--hostname", self.hostname),
        ]
        self.log = open(log_path, "ab")  # closed in stop()
        self.proc = subprocess.Popen(
            argv,
            cwd=PROJECT_DIR,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )

    def wait_ready(self) -> float:
        """Until the worker answers a ping and its processes have finished loading the embedding model
        (each pool process loads it in the background at start); returns the seconds waited."""
        from registry_site.celery import app

        started = time.monotonic()
        while not app.control.ping(destination=[self.hostname], timeout=1.0):
            if self.proc.poll() is not None:
                raise RuntimeError(f"the worker exited:\n{self.log_tail()}")
            if time.monotonic() - started > 180:
                raise RuntimeError(f"the worker did not answer in 180 s:\n{self.log_tail()}")
        root = psutil.Process(self.proc.pid)
        quiet = 0
        while quiet < 3 and time.monotonic() - started < 300:
            before = cpu_seconds([root.pid])
            time.sleep(1.0)
            quiet = quiet + 1 if cpu_seconds([root.pid]) - before < 0.05 else 0
        return time.monotonic() - started

    def log_tail(self, lines: int = 20) -> str:
        """The end of the worker's output (its file goes with the temporary folder)."""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        stop_processes([self.proc])
        self.log.close()


def queue_drained(redis) -> bool:
    """No task waiting in the broker and none delivered but unacknowledged (acks are late)."""
    return redis.llen("celery") == 0 and redis.hlen("unacked") == 0


def wait_drained(redis, limit: float = 900) -> float:
    started = time.monotonic()
    while not queue_drained(redis):
        if time.monotonic() - started > limit:
            raise RuntimeError("the task queue did not drain")
        time.sleep(0.2)
    return time.monotonic() - started


def own_cpu_seconds() -> float:
    """This process alone (its children are the worker and MCP servers, counted apart)."""
    times = psutil.Process().cpu_times()
    return times.user + times.system


def machine_cpu_seconds() -> tuple[float, float]:
    """CPU seconds every process on the machine has used since boot, and those the hypervisor stole."""
    times = psutil.cpu_times()
    busy = times.user + times.nice + times.system
    busy += getattr(times, "irq", 0.0) + getattr(times, "softirq", 0.0)  # guest time is inside user
    return busy, getattr(times, "steal", 0.0)


def sweep(label: str, total: int, pids: dict[str, list[int]], redis) -> dict:
    """Send one sweep through the broker and time it until every server has been checked after it
    (or, if checks expired in the queue, until no task is left)."""
    from django.utils import timezone

    from servers.models import Server
    from servers.tasks import sweep_health_task

    cpu_before = {name: cpu_seconds(group) for name, group in pids.items()}
    bench_before = own_cpu_seconds()
    busy_before, steal_before = machine_cpu_seconds()
    t0 = timezone.now()
    started = time.perf_counter()
    sweep_health_task.delay()  # through the broker, as beat sends it
    next_report, drained_polls = PROGRESS_EVERY_SECONDS, 0
    while True:
        done = Server.objects.filter(last_checked_at__gte=t0).count()
        elapsed = time.perf_counter() - started
        if done >= total:
            break
        # the sweep message stays unacked until every check is queued, so an empty queue means done
        drained_polls = drained_polls + 1 if queue_drained(redis) else 0
        if drained_polls >= 10:
            break
        if elapsed >= next_report:
            say(f"    {label}: {done}/{total} checked after {elapsed:.0f} s")
            next_report += PROGRESS_EVERY_SECONDS
        if elapsed > SWEEP_TIMEOUT_SECONDS:
            raise RuntimeError(f"{label}: only {done}/{total} checked after {elapsed:.0f} s")
        time.sleep(0.1)
    cpu = {name: cpu_seconds(group) - cpu_before[name] for name, group in pids.items()}
    bench = own_cpu_seconds() - bench_before
    busy, steal = machine_cpu_seconds()
    cpu["others"] = busy - busy_before - sum(cpu.values()) - bench  # not ours: other work on the machine
    cpu["stolen"] = steal - steal_before  # by the hypervisor, on a shared host
    statuses = Counter(Server.objects.filter(last_checked_at__gte=t0).values_list("health_status", flat=True))
    details = Counter(
        Server.objects.filter(last_checked_at__gte=t0)
        .exclude(health_status="healthy")
        .values_list("health_detail", flat=True)
    )
    result = {
        "seconds": elapsed,
        "checked": done,
        "statuses": dict(statuses),
        "details": dict(details),
        "cpu": cpu,
    }
    cpu_text = ", ".join(f"{name} {value:.1f}" for name, value in cpu.items())
    missed = f", {total - done} NOT CHECKED (expired in the queue)" if done < total else ""
    say(
        f"    {label}: {elapsed:.1f} s, {done / elapsed:.1f} checks/s{missed}, "
        f"{dict(sorted(statuses.items()))}; CPU s: {cpu_text}"
    )
    say(f"      not healthy: {dict(details.most_common(3))}")
    result["drained"] = wait_drained(redis)
    if result["drained"] > 0.5:
        say(f"      (follow-up tasks drained {result['drained']:.1f} s after the last check)")
    return result


def warm_up(worker: "Worker", redis) -> None:
    """A few checks through the worker, so every pool process has imported the check code (the first
    check of a process imports the MCP SDK and httpx2) before a sweep is timed."""
    from servers.models import Server
    from servers.tasks import check_server_task

    for server_id in Server.objects.order_by("pk").values_list("pk", flat=True)[: 4 * worker.concurrency]:
        check_server_task.delay(server_id)
    wait_drained(redis)


def single_checks(
    up_url: str, refused_url: str | None, count: int = 30
) -> tuple[dict[str, float], list[dict]]:
    """Median milliseconds of one check run alone in this process and of one new httpx2 client, and
    the tools an up server lists."""
    import httpx2

    from servers.health import _run, probe

    def median_ms(fn) -> float:
        fn()  # warm-up
        out = []
        for _ in range(count):
            started = time.perf_counter()
            fn()
            out.append(time.perf_counter() - started)
        return statistics.median(out) * 1000

    def check(url):
        return lambda: _run(probe(url, transport="streamable-http", headers={}, timeout=10))

    singles = {"up": median_ms(check(up_url))}
    if refused_url is not None:
        singles["refused"] = median_ms(check(refused_url))
    singles["httpx2.AsyncClient()"] = median_ms(lambda: httpx2.AsyncClient())
    return singles, check(up_url)().tools


def postgres_pid(var_dir: Path) -> int:
    return int((var_dir / "postgres" / "postmaster.pid").read_text().split()[0])


def redis_pid(var_dir: Path) -> int:
    return int((var_dir / "redis" / "redis.pid").read_text().strip())


def run(args, tmp: Path) -> None:
    var_dir = tmp / "var"
    total = args.servers
    up_count, down_count = total // 2, total - total // 2
    if args.silent > down_count:
        raise SystemExit(f"--silent is at most {down_count}")
    if args.runs < 1 or args.servers < 2:
        raise SystemExit("--runs must be at least 1 and --servers at least 2")
    say(f"==> embedded PostgreSQL and Redis under {var_dir}; migrating")
    django_setup(var_dir, args.timeout, args.interval)
    from django.db import connections

    from runtime import embedded

    try:
        measure(args, tmp, var_dir, up_count, down_count)
    finally:
        connections.close_all()
        embedded.release(var_dir)  # stop PostgreSQL and Redis before the temporary folder goes


def measure(args, tmp: Path, var_dir: Path, up_count: int, down_count: int) -> None:
    import redis as redis_lib
    from django.conf import settings
    from django.core.management import call_command

    total = up_count + down_count
    call_command("migrate", interactive=False, verbosity=0)
    redis = redis_lib.Redis.from_url(settings.REDIS_URL)
    say(f"==> {args.mcp_processes} MCP server processes for {up_count} up servers (one port each)")
    mcp = McpServers(args.mcp_processes, up_count)
    refused_socks, silent = [], None
    worker = None
    try:
        mcp.wait_ready()
        for _ in range(down_count - args.silent):  # bound, never listening: connecting is refused
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((LOOPBACK, 0))
            refused_socks.append(sock)
        silent = SilentPorts(args.silent)
        down_ports = [sock.getsockname()[1] for sock in refused_socks]
        for n, port in enumerate(silent.ports):  # spread evenly through the sweep's order
            down_ports.insert(n * down_count // args.silent, port)
        up_urls = [f"http://{LOOPBACK}:{port}/mcp" for port in mcp.ports]
        down_urls = [f"http://{LOOPBACK}:{port}/mcp" for port in down_ports]
        refused_url = f"http://{LOOPBACK}:{refused_socks[0].getsockname()[1]}/mcp" if refused_socks else None
        singles, tools = single_checks(up_urls[0], refused_url)
        seed(up_urls, down_urls, None if args.discover else tools)
        say(
            f"==> registered {total} servers: {up_count} up, {down_count - args.silent} refused, "
            f"{args.silent} silent; timeout {args.timeout} s, interval {args.interval} s"
        )
        say(
            "==> one check alone in this process, median: "
            + ", ".join(f"{name} {value:.1f} ms" for name, value in singles.items())
        )
        pids = {
            "worker": [],
            "mcp servers": [proc.pid for proc in mcp.procs],
            "postgres": [postgres_pid(var_dir)],
            "redis": [redis_pid(var_dir)],
        }
        results, discovery = {}, None
        for concurrency in args.concurrency:
            worker = Worker(concurrency, tmp / f"worker-c{concurrency}.log", args.log_level)
            say(f"==> worker with --concurrency {concurrency}: starting")
            say(f"    ready (embedding model loaded in every pool process) after {worker.wait_ready():.0f} s")
            pids["worker"] = [worker.proc.pid]
            if args.discover and discovery is None:
                discovery = sweep(f"c={concurrency} first sweep, discovering tools", total, pids, redis)
            else:
                warm_up(worker, redis)
            runs = [sweep(f"c={concurrency} run {n}", total, pids, redis) for n in range(1, args.runs + 1)]
            results[concurrency] = runs
            worker.stop()
            worker = None
        report(args, results, singles, discovery)
    finally:
        if worker is not None:
            worker.stop()
        if silent is not None:
            silent.stop()
        for sock in refused_socks:
            sock.close()
        mcp.stop()


def report(args, results: dict, singles: dict, discovery: dict | None) -> None:
    total = args.servers
    say("")
    say(f"| measure ({total} servers, {args.silent} silent, timeout {args.timeout} s) | value |")
    say("| --- | --- |")
    medians = {}
    if discovery is not None:
        say(
            f"| first sweep, discovering every up server's tools | {discovery['seconds']:.1f} s; "
            f"then {discovery['drained']:.0f} s until the embeddings it queued had run |"
        )
    for concurrency, runs in results.items():
        c = f"concurrency {concurrency}"
        seconds = statistics.median(r["seconds"] for r in runs)
        medians[concurrency] = seconds
        cpu = {name: statistics.median(r["cpu"][name] for r in runs) for name in runs[0]["cpu"]}
        rate = statistics.median(r["checked"] / r["seconds"] for r in runs)
        each = ", ".join(f"{r['seconds']:.1f}" for r in runs)
        say(f"| {c}: sweep, median of {len(runs)} | {seconds:.1f} s ({rate:.1f} checks/s; {each} s) |")
        checked = sorted({r["checked"] for r in runs})
        if checked != [total]:
            say(f"| {c}: servers checked per sweep | {', '.join(map(str, checked))} of {total} |")
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(runs[-1]["statuses"].items()))
        say(f"| {c}: statuses (last run) | {statuses} |")
        details = ", ".join(f"{k}: {v}" for k, v in sorted(runs[-1]["details"].items()))
        say(f"| {c}: not healthy because (last run) | {details} |")
        cpu_text = ", ".join(f"{name} {value:.1f}" for name, value in cpu.items())
        say(f"| {c}: CPU seconds per sweep, median | {cpu_text} |")
        say(f"| {c}: worker CPU per check | {cpu['worker'] / runs[-1]['checked'] * 1000:.0f} ms |")
    if len(medians) > 1:
        base = min(medians)
        for concurrency, seconds in medians.items():
            if concurrency != base:
                say(f"| sweep time, concurrency {concurrency} / {base} | {seconds / medians[base]:.2f} |")
    for name, value in singles.items():
        say(f"| alone in this process, median: {name} | {value:.1f} ms |")


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--mcp-server":
        mcp_server_main(int(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[2, 8])
    parser.add_argument("--silent", type=int, default=0, help="down servers that accept and never answer")
    parser.add_argument("--timeout", type=int, default=10, help="HEALTH_CHECK_TIMEOUT_SECONDS")
    parser.add_argument(
        "--interval", type=int, default=300, help="HEALTH_CHECK_INTERVAL_SECONDS (checks expire 1 s before)"
    )
    parser.add_argument(
        "--discover", action="store_true", help="register without tools: the first sweep discovers them"
    )
    parser.add_argument("--mcp-processes", type=int, default=4)
    parser.add_argument("--log-level", default="INFO", help="the worker's (INFO, as `make run` runs it)")
    args = parser.parse_args()
    # SIGTERM and SIGHUP unwind like Ctrl-C, so every process and embedded server is stopped
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.default_int_handler)
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp:
        run(args, Path(tmp))


if __name__ == "__main__":
    main()
