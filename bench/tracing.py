"""What tracing costs a `tools/call` through the gateway (gateway/tracing.py): the same registry served
twice, first with tracing off (no endpoint set: the default), then with every call traced (the SDK's
OTLP/HTTP exporter to a receiver on loopback that reads and drops the spans, sampler always_on). In each,
one client calls the MCP server direct and through the gateway in turn, pair by pair, so both see the
same moment of a noisy machine; the gateway's p50 overhead over direct is the figure, and on - off is
what tracing adds. Also, in-process: the time of the off path itself (the calls the gateway makes when
tracing is off), per request.

Run: .venv/bin/python bench/tracing.py [--calls 2000]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from common import PROJECT_DIR, Serve, free_port, manage, registry_env
from gateway_calls import CALL, HEADERS

SEED = """
from accounts.choices import AuthMethod
from accounts.models import User
from accounts.principal import principal_for_user
from accounts.services import user_token_issue
from servers.models import Server
Server.objects.create(path="/bench", name="Bench", proxy_pass_url="{upstream}", is_enabled=True,
                      embedding_dirty=False)
admin = User.objects.create(username="bench-admin", is_superuser=True, is_staff=True)
grant = user_token_issue(principal=principal_for_user(admin, auth_method=AuthMethod.SESSION),
                         requested_scopes=None, expires_in_hours=2, description="bench", admin=True)
print(grant.access_token)
"""


class _Sink(BaseHTTPRequestHandler):
    spans = 0

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).spans += 1
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        return None


def pairs(direct: str, gateway: str, token: str, calls: int) -> tuple[list[float], list[float]]:
    timed = {direct: [], gateway: []}
    with (
        httpx.Client(headers=HEADERS, timeout=20) as plain,
        httpx.Client(headers={**HEADERS, "Authorization": f"Bearer {token}"}, timeout=20) as authorized,
    ):
        for client, url in ((plain, direct), (authorized, gateway)):  # warm up
            for _ in range(50):
                warm = client.post(url, json=CALL)
                assert warm.status_code == 200, (url, warm.status_code, warm.text[:200])
        for _ in range(calls):
            for client, url in ((plain, direct), (authorized, gateway)):
                started = time.perf_counter()
                answer = client.post(url, json=CALL)
                timed[url].append(time.perf_counter() - started)
                assert answer.status_code == 200, answer.text[:200]
    return timed[direct], timed[gateway]


def off_path(rounds: int) -> float:
    """Nanoseconds per request of what the gateway calls when tracing is off."""
    sys.path.insert(0, str(PROJECT_DIR))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry_site.settings.base")
    import django

    django.setup()
    from gateway import tracing
    from gateway.messages import Checked

    checked = Checked(batch=False, forward=[CALL])
    started = time.perf_counter_ns()
    for _ in range(rounds):
        checked.trace = tracing.received_all(None, [], checked)
        checked.forward = tracing.forwarded(checked.trace, checked.forward, "")
        tracing.ended_all(checked.trace, {})
    return (time.perf_counter_ns() - started) / rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    calls = parser.parse_args().calls
    sink = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    upstream_port = free_port()
    upstream = subprocess.Popen(
        [sys.executable, str(PROJECT_DIR / "bench" / "gateway_upstream.py"), str(upstream_port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    direct = f"http://127.0.0.1:{upstream_port}/mcp"
    for _ in range(200):  # until the upstream answers
        try:
            if httpx.post(direct, json=CALL, headers=HEADERS, timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.05)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            port = free_port()
            env = registry_env(Path(tmp) / "var", port, WEB_CONCURRENCY="1")
            manage(env, "migrate", "--verbosity", "0")
            token = manage(env, "shell", "-c", SEED.replace("{upstream}", direct)).strip().splitlines()[-1]
            traced = {
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{sink.server_port}/v1/traces",
                "OTEL_TRACES_SAMPLER": "always_on",
            }
            for name, extra in (("tracing off", {}), ("tracing on, every call", traced)):
                with Serve({**env, **extra}, port):
                    plain, through = pairs(direct, f"http://127.0.0.1:{port}/bench/mcp", token, calls)
                rows.append((name, statistics.median(plain), statistics.median(through)))
    finally:
        upstream.terminate()
        upstream.wait(10)
        sink.shutdown()
    print(f"tools/call, one client, {calls} pairs each (direct and gateway in turn), one web process\n")
    print("| gateway | direct p50 ms | gateway p50 ms | overhead p50 ms |")
    print("|---|---|---|---|")
    for name, plain, through in rows:
        print(f"| {name} | {plain * 1000:.3f} | {through * 1000:.3f} | {(through - plain) * 1000:+.3f} |")
    added = (rows[1][2] - rows[1][1]) - (rows[0][2] - rows[0][1])
    print(
        f"\ntracing on adds {added * 1000:+.3f} ms p50 a call; OTLP export requests received: {_Sink.spans}"
    )
    print(f"the off path itself: {off_path(200_000):.0f} ns a request (in-process)")


if __name__ == "__main__":
    main()
