"""The requests bench/gateway.py makes and how it measures them: the bodies (an MCP tools/call, an A2A
SendMessage, a tools/list), clients in threads for a while, pairs of routes side by side, the web processes'
CPU and Redis commands, py-spy's profile, and the registry under granian beside `serve`'s uvicorn."""

import collections
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import redis
from common import PROJECT_DIR, manage

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
