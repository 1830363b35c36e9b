"""What the metrics client adds to a request: `emit()` alone, and `GET /validate` with the client on and off.

A throw-away registry on its own embedded servers; the metrics service is a loopback HTTP receiver in
this process that answers 202 (so the sender thread really posts while requests run). Three measures:
1. `emit()` in a tight loop, in bursts of 1,000 with a pause between (the queue never fills);
2. `/validate` (a registry token, an allowed `initialize`) through Django's test client in one process,
   alternating blocks with the client on and off so drift cancels out;
3. `/validate` over HTTP through a real `manage.py serve` (the web process): four runs, off, on, on, off.

Run: .venv/bin/python bench/metrics_client.py [--emits 20000] [--requests 2000] [--http-requests 1000]
"""

import argparse
import json
import statistics
import tempfile
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import requests
from common import Serve, free_port, manage, ms, registry_env

KEY = "bench-registry-key"

SEED = r"""
import json
from accounts.choices import AuthMethod
from accounts.models import Scope
from accounts.principal import principal_for_user
from accounts.services import user_token_issue
from django.contrib.auth.models import Group
from accounts.models import User
from servers.models import Server

Server.objects.create(path="/currenttime", name="Current Time", proxy_pass_url="http://127.0.0.1:9/mcp",
                      is_enabled=True, health_status="unknown")
group = Group.objects.create(name="timers")
scope = Scope.objects.create(name="time-exec", server_rules=[
    {"server": "currenttime", "methods": ["initialize", "tools/list"], "tools": []}])
scope.groups.add(group)
user = User.objects.create(username="bench-tim")
user.groups.add(group)
grant = user_token_issue(principal=principal_for_user(user, auth_method=AuthMethod.SESSION),
                         requested_scopes=None, expires_in_hours=2, description="bench")
print(json.dumps({"token": grant.access_token}))
"""

IN_PROCESS = r"""
import json, time
from django.conf import settings
from django.test import Client
from core import metrics_client as client as metrics

EMITS, REQUESTS, BLOCK = {emits}, {requests}, 50
KEY, TOKEN = settings.METRICS_API_KEY, {token!r}
client = metrics.reset_client()
out = {{"emit_on": [], "emit_off": [], "validate_on": [], "validate_off": []}}

def emits(label):
    for _ in range(EMITS // 1000):
        for n in range(1000):
            started = time.perf_counter()
            metrics.emit("custom", duration_ms=1.5, dimensions={{"n": n, "bench": "emit"}})
            out[label].append(time.perf_counter() - started)
        time.sleep(0.05)  # let the sender drain: a burst of bursts, not a queue filling for ever

emits("emit_on")
settings.METRICS_API_KEY = ""
emits("emit_off")
settings.METRICS_API_KEY = KEY

# The whole hook of an auth check as the request thread runs it: hash, dimensions, emit.
from accounts.authentication import principal_from_bearer, report_auth_request
principal = principal_from_bearer(TOKEN, report=False)
out["hook_on"] = []
for _ in range(EMITS // 1000):
    for _ in range(1000):
        started = time.perf_counter()
        report_auth_request(started=started, success=True, principal=principal, raw=TOKEN, server="/currenttime")
        out["hook_on"].append(time.perf_counter() - started)
    time.sleep(0.05)

web = Client(HTTP_HOST="localhost")
headers = {{"Authorization": f"Bearer {{TOKEN}}", "X-Original-URL": "/currenttime/mcp"}}
for _ in range(200):  # warm-up: connections, caches, code paths
    assert web.get("/validate", headers=headers).status_code == 200
for block in range(2 * REQUESTS // BLOCK):
    on = block % 2 == 0
    settings.METRICS_API_KEY = KEY if on else ""
    for _ in range(BLOCK):
        started = time.perf_counter()
        response = web.get("/validate", headers=headers)
        out["validate_on" if on else "validate_off"].append(time.perf_counter() - started)
        assert response.status_code == 200, response.content
settings.METRICS_API_KEY = KEY
client.close(timeout=10)
out["sent"], out["dropped"] = client.sent, client.dropped
print(json.dumps(out))
"""


class Receiver:
    """The metrics service stand-in: answers 202 at once and counts what it received, by type."""

    def __init__(self):
        self.counts: Counter = Counter()
        self.posts = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                receiver.posts += 1
                receiver.counts.update(m["type"] for m in body["metrics"])
                payload = json.dumps({"accepted": len(body["metrics"]), "rejected": 0, "request_id": "b"})
                self.send_response(202)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload.encode())

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()


def validate_over_http(port: int, token: str, count: int) -> list[float]:
    session = requests.Session()
    headers = {"Authorization": f"Bearer {token}", "X-Original-URL": "/currenttime/mcp"}
    url = f"http://127.0.0.1:{port}/validate"
    out = []
    for n in range(count + 100):
        started = time.perf_counter()
        response = session.get(url, headers=headers, timeout=30)
        if n >= 100:  # the first 100 warm up
            out.append(time.perf_counter() - started)
        assert response.status_code == 200, response.text[:200]
    return out


def us(values: list[float], q: int | None = None) -> float:
    return ms(values, q) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--emits", type=int, default=20_000)
    parser.add_argument("--requests", type=int, default=2000, help="per mode, through the test client")
    parser.add_argument("--http-requests", type=int, default=1000, help="per mode, through the web process")
    args = parser.parse_args()
    receiver = Receiver()
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="bench-var-") as tmp:
        on = registry_env(Path(tmp) / "var", port, METRICS_SERVICE_URL=receiver.url, METRICS_API_KEY=KEY)
        off = {**on, "METRICS_API_KEY": "", "METRICS_API_KEY_REGISTRY": ""}
        manage(on, "migrate", "--noinput")
        token = json.loads(manage(on, "shell", "-c", SEED).strip().splitlines()[-1])["token"]
        script = IN_PROCESS.format(emits=args.emits, requests=args.requests, token=token)
        inproc = json.loads(manage(on, "shell", "-c", script).strip().splitlines()[-1])
        received_in_process = dict(receiver.counts)
        receiver.counts.clear()
        http_on, http_off = [], []
        # Off, on, on, off: whatever drifts over the runs (a warming cache, other load) falls on both.
        for env, out in ((off, http_off), (on, http_on), (on, http_on), (off, http_off)):
            with Serve(env, port):
                out += validate_over_http(port, token, args.http_requests // 2)
                time.sleep(1.5)  # one flush interval: the last batch leaves before the stop
        received_http = receiver.counts["auth_request"]

    on_ms, off_ms = ms(inproc["validate_on"]), ms(inproc["validate_off"])
    print("| measure | on | off |")
    print("| --- | --- | --- |")
    print(
        f"| `emit()`, median / p99 | {us(inproc['emit_on']):.1f} µs / {us(inproc['emit_on'], 99):.1f} µs "
        f"| {us(inproc['emit_off']):.2f} µs / {us(inproc['emit_off'], 99):.2f} µs |"
    )
    print(
        f"| hook of one auth check (`report_auth_request`), median / p99 | {us(inproc['hook_on']):.1f} µs / "
        f"{us(inproc['hook_on'], 99):.1f} µs | |"
    )
    print(
        f"| `/validate`, test client, median / p99 | {on_ms:.3f} ms / {ms(inproc['validate_on'], 99):.3f} ms "
        f"| {off_ms:.3f} ms / {ms(inproc['validate_off'], 99):.3f} ms |"
    )
    print(
        f"| `/validate`, web process over HTTP, median / p99 | {ms(http_on):.2f} ms / {ms(http_on, 99):.2f} ms "
        f"| {ms(http_off):.2f} ms / {ms(http_off, 99):.2f} ms |"
    )
    print()
    print(f"added per /validate (test client, median on − off): {(on_ms - off_ms) * 1000:.0f} µs")
    print(
        f"ratio of medians on / off: test client {on_ms / off_ms:.3f}, web process {ms(http_on) / ms(http_off):.3f}"
    )
    print(f"mean emit() on: {statistics.mean(inproc['emit_on']) * 1e6:.1f} µs")
    print(
        f"in process: sent {inproc['sent']}, dropped {inproc['dropped']}, received {received_in_process}; "
        f"web process: {received_http} auth_request metrics received for {2 * (args.http_requests // 2 + 100)} "
        "requests with the client on"
    )


if __name__ == "__main__":
    main()
