"""Start-up benchmark: seconds from `manage.py serve` to /health answering 200.

Cold = an empty var/ folder (initdb, first migrations, admin creation); warm = the same folder again.
Run: .venv/bin/python bench/startup.py [--runs 3]
"""

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def time_to_healthy(var_dir: Path) -> float:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY")}
    env.update(REGISTRY_VAR_DIR=str(var_dir), REGISTRY_PORT=str(port))
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "serve"],
        cwd=PROJECT_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while time.monotonic() - started < 180:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                    if response.status == 200:
                        return time.monotonic() - started
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("serve did not become healthy in 180 s")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    cold, warm = [], []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="bench-var-") as tmp:
            var_dir = Path(tmp) / "var"
            cold.append(time_to_healthy(var_dir))
            warm.append(time_to_healthy(var_dir))
        print(f"run {run + 1}/{args.runs}: cold {cold[-1]:.2f} s, warm {warm[-1]:.2f} s", flush=True)
    print(f"| serve → /health 200, cold (empty var/) | {statistics.median(cold):.2f} s |")
    print(f"| serve → /health 200, warm (kept var/) | {statistics.median(warm):.2f} s |")


if __name__ == "__main__":
    main()
