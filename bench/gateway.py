"""tools/call through the built-in gateway vs straight to the MCP server, 1 and 16 clients.

One stateless MCP server (official SDK, JSON answers) and one `manage.py serve`; the same JSON-RPC
`tools/call` posted to the server directly and to `/bench/mcp` on the registry, with an admin token.

Run: .venv/bin/python bench/gateway.py [--seconds 10]
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from common import PROJECT_DIR, Serve, free_port, manage, registry_env

SEED = """
from servers.models import Server
from accounts.models import User
from accounts.choices import AuthMethod
from accounts.principal import principal_for_user
from accounts.services import user_token_issue
Server.objects.create(path="/bench", name="Bench", description="d", proxy_pass_url="{upstream}",
                      is_enabled=True)
admin = User.objects.create(username="bench-admin", is_superuser=True, is_staff=True)
grant = user_token_issue(principal=principal_for_user(admin, auth_method=AuthMethod.SESSION),
                         requested_scopes=None, expires_in_hours=2, description="bench")
print(grant.access_token)
"""
CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "add", "arguments": {"a": 2, "b": 3}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


def load(url: str, headers: dict, clients: int, seconds: float) -> tuple[list[float], int]:
    latencies: list[float] = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def worker():
        mine = []
        with httpx.Client(headers=headers, timeout=30) as http:
            while time.monotonic() < stop:
                started = time.perf_counter()
                response = http.post(url, json=CALL)
                mine.append(time.perf_counter() - started)
                assert response.status_code == 200, response.text[:200]
                assert '"5"' in response.text or "5" in response.json()["result"]["content"][0]["text"]
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, len(latencies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    upstream_port, port = free_port(), free_port()
    upstream = subprocess.Popen(
        [sys.executable, str(PROJECT_DIR / "bench" / "gateway_upstream.py"), str(upstream_port)]
    )
    try:
        time.sleep(3)
        direct_url = f"http://127.0.0.1:{upstream_port}/mcp"
        with tempfile.TemporaryDirectory(prefix="bench-var-") as tmp:
            env = registry_env(Path(tmp) / "var", port)
            manage(env, "migrate", "--verbosity", "0")
            token = (
                manage(env, "shell", "-c", SEED.replace("{upstream}", direct_url)).strip().splitlines()[-1]
            )
            with Serve(env, port):
                time.sleep(15)  # the web process loads the embedding model in the background at start
                gateway_url = f"http://127.0.0.1:{port}/bench/mcp"
                auth = {**HEADERS, "Authorization": f"Bearer {token}"}
                load(direct_url, HEADERS, 1, 2)
                load(gateway_url, auth, 1, 2)  # warm-up
                rows = []
                for clients in (1, 16):
                    direct, n_direct = load(direct_url, HEADERS, clients, args.seconds)
                    through, n_through = load(gateway_url, auth, clients, args.seconds)
                    rows.append((clients, direct, n_direct, through, n_through))
    finally:
        upstream.terminate()
        upstream.wait(10)
    print(
        "| clients | direct p50 / p99 | direct req/s | gateway p50 / p99 | gateway req/s | p50 overhead | throughput ratio |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for clients, direct, n_direct, through, n_through in rows:
        d50, t50 = statistics.median(direct) * 1000, statistics.median(through) * 1000
        d99 = statistics.quantiles(direct, n=100)[98] * 1000
        t99 = statistics.quantiles(through, n=100)[98] * 1000
        print(
            f"| {clients} | {d50:.2f} / {d99:.2f} ms | {n_direct / args.seconds:.0f} | {t50:.2f} / {t99:.2f} ms "
            f"| {n_through / args.seconds:.0f} | {t50 - d50:+.2f} ms | {n_through / n_direct:.2f} |"
        )


if __name__ == "__main__":
    main()
