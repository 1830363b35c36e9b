"""The /v0.1 first page (cached, 10,000 servers) against a bare uvicorn app serving the same bytes, side by
side in one run, with wrk (the Debian package) as the client at 1 and 16 connections.

The registry runs as `make run` starts it (WEB_CONCURRENCY web processes); the bare app runs as as many
uvicorn processes with httptools on one SO_REUSEPORT port, answering every request with the page's body
and headers as the registry sent them. The ratio is the registry's requests per second over the bare
app's: what the registry's authentication, permission view and page cache cost above the bytes.

Run: .venv/bin/python bench/v01_first_page.py [--servers 10000] [--seconds 10] [--rounds 3]
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests
from common import Serve, free_port, manage, registry_env, seed_servers

BARE_APP = """
import json, socket, sys
import uvicorn

answer = json.load(open(sys.argv[1]))
body = answer["body"].encode()
headers = [(k.encode(), v.encode()) for k, v in answer["headers"]]

async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})

sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
sock.bind(("127.0.0.1", int(sys.argv[2])))
config = uvicorn.Config(app, http="httptools", lifespan="off", access_log=False, log_level="warning",
                        server_header=False)
uvicorn.Server(config).run(sockets=[sock])
"""

_LATENCY = re.compile(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)$", re.M)
_RATE = re.compile(r"^Requests/sec:\s+([\d.]+)$", re.M)
_ERRORS = re.compile(r"Non-2xx or 3xx responses: (\d+)|Socket errors: .*")


def wrk(url: str, token: str, connections: int, seconds: float) -> dict:
    command = [
        "wrk",
        f"-t{min(connections, 2)}",
        f"-c{connections}",
        f"-d{max(1, round(seconds))}s",
        "--latency",
        "-H",
        f"Authorization: Bearer {token}",
        url,
    ]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}
    latency = {q: float(v) * scale[unit] for q, v, unit in _LATENCY.findall(out)}
    errors = _ERRORS.search(out)
    return {
        "rate": float(_RATE.search(out).group(1)),
        "p50": latency.get("50", float("nan")),
        "p99": latency.get("99", float("nan")),
        "errors": errors.group(0) if errors else "",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; medians are printed")
    parser.add_argument("--settle", type=float, default=20.0, help="seconds for the processes to warm up")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is not installed: apt-get install wrk")
    port, bare_port = free_port(), free_port()
    processes = int(os.environ.get("WEB_CONCURRENCY", os.cpu_count() or 1))
    with tempfile.TemporaryDirectory(prefix="bench-var-") as tmp:
        env = registry_env(Path(tmp) / "var", port, WEB_CONCURRENCY=str(processes))
        manage(env, "migrate", "--verbosity", "0")
        token = seed_servers(env, args.servers)
        page = f"http://127.0.0.1:{port}/v0.1/servers?limit=100"
        with Serve(env, port):
            time.sleep(args.settle)
            answer = requests.get(page, headers={"Authorization": f"Bearer {token}"}, timeout=30)
            assert answer.status_code == 200, answer.text[:200]
            saved = Path(tmp) / "answer.json"
            kept = [(k, v) for k, v in answer.headers.items() if k.lower() not in ("content-length", "date")]
            saved.write_text(json.dumps({"body": answer.text, "headers": kept}))
            bare = [
                subprocess.Popen([sys.executable, "-c", BARE_APP, str(saved), str(bare_port)])
                for _ in range(processes)
            ]
            try:
                bare_page = f"http://127.0.0.1:{bare_port}/v0.1/servers?limit=100"
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    try:
                        requests.get(bare_page, timeout=1)
                        break
                    except requests.ConnectionError:
                        time.sleep(0.1)
                results: dict = {}
                for connections in (1, 16):
                    for _ in range(args.rounds):
                        for name, url in (("registry", page), ("bare uvicorn", bare_page)):
                            wrk(url, token, connections, 2)  # warm-up
                            found = wrk(url, token, connections, args.seconds)
                            results.setdefault((name, connections), []).append(found)
            finally:
                for process in bare:
                    process.terminate()
                    process.wait(10)
    print(
        f"{args.servers} servers, {processes} web processes each, {args.rounds} rounds of {args.seconds:.0f} s"
    )
    print(f"page: {len(answer.content)} bytes\n")
    print("| connections | registry req/s, p50, p99 | bare uvicorn req/s, p50, p99 | ratio |")
    print("| --- | --- | --- | --- |")
    for connections in (1, 16):
        cells = []
        rates = {}
        for name in ("registry", "bare uvicorn"):
            runs = results[(name, connections)]
            rates[name] = statistics.median(r["rate"] for r in runs)
            p50 = statistics.median(r["p50"] for r in runs)
            p99 = statistics.median(r["p99"] for r in runs)
            errors = "; ".join(r["errors"] for r in runs if r["errors"])
            cells.append(
                f"{rates[name]:.0f} req/s, {p50:.2f} ms, {p99:.2f} ms" + (f" ({errors})" if errors else "")
            )
        print(
            f"| {connections} | {cells[0]} | {cells[1]} | {rates['registry'] / rates['bare uvicorn']:.2f} |"
        )


if __name__ == "__main__":
    main()
