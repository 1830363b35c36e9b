"""Memory of each process `make run` starts (`manage.py serve`), idle and after searches.

Starts the whole system on throw-away embedded servers, waits for the warm-ups, and reports for every
process of the tree (and the embedded PostgreSQL and Redis, which run detached) its resident set (RSS),
the memory only it holds (USS), and whether it has loaded torch (the embedding model). Then runs a
semantic search and a registration through every web process and reports again.

Run: .venv/bin/python bench/memory.py [--settle 40]
"""

import argparse
import tempfile
import time
from pathlib import Path

import psutil
import requests
from common import Serve, free_port, manage, registry_env

ADMIN = r"""
from accounts.models import User
from accounts.choices import AuthMethod
from accounts.principal import principal_for_user
from accounts.services import user_token_issue
admin = User.objects.create(username="bench-admin", is_superuser=True, is_staff=True)
grant = user_token_issue(principal=principal_for_user(admin, auth_method=AuthMethod.SESSION),
                         requested_scopes=None, expires_in_hours=2, description="bench", admin=True)
print(grant.access_token)
"""


def role(process: psutil.Process) -> str:
    line = " ".join(process.cmdline())
    for needle, name in (
        ("registry_site.asgi", "web"),
        ("metrics_asgi", "metrics service"),
        ("metrics_exporter", "metrics exporter"),
        (" worker ", "celery worker"),
        (" beat ", "celery beat"),
        ("manage.py serve", "supervisor (manage.py serve)"),
        ("postgres", "PostgreSQL"),
        ("redis-server", "Redis"),
    ):
        if needle in f" {line} ":
            return name
    return line[:60]


def has_torch(process: psutil.Process) -> bool:
    try:
        return any("libtorch" in m.path for m in process.memory_maps())
    except psutil.Error:
        return False


def processes(serve_pid: int, var_dir: Path) -> list[psutil.Process]:
    tree = [psutil.Process(serve_pid), *psutil.Process(serve_pid).children(recursive=True)]
    pids = {p.pid for p in tree}
    for process in psutil.process_iter(["cmdline"]):
        if process.pid not in pids and str(var_dir) in " ".join(process.info["cmdline"] or []):
            tree.append(process)  # the embedded servers run detached, with their data in var/
    return tree


def table(tree: list[psutil.Process]) -> list[str]:
    rows, total = [], 0
    for process in sorted(tree, key=lambda p: (role(p), p.pid)):
        info = process.memory_full_info()
        total += info.uss
        torch = "yes" if has_torch(process) else "no"
        rows.append(
            f"| {role(process)} | {process.pid} | {info.rss / 2**20:.0f} MB | {info.uss / 2**20:.0f} MB | {torch} |"
        )
    rows.append(f"| all (sum of USS) | | | {total / 2**20:.0f} MB | |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settle", type=float, default=40.0)
    args = parser.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        var_dir = Path(tmp) / "var"
        env = registry_env(var_dir, port)
        manage(env, "migrate", "--verbosity", "0")
        token = manage(env, "shell", "-c", ADMIN).strip().splitlines()[-1]
        with Serve(env, port) as serve:
            time.sleep(args.settle)
            idle = table(processes(serve.proc.pid, var_dir))
            session = requests.Session()
            session.headers["Authorization"] = f"Bearer {token}"
            for n in range(20):  # new connections: both web processes answer some
                requests.post(f"http://127.0.0.1:{port}/api/agents/discover/semantic", params={"query": f"weather {n}"},
                              headers=session.headers, timeout=60).raise_for_status()  # fmt: skip
            time.sleep(5)
            searched = table(processes(serve.proc.pid, var_dir))
    header = "| process | pid | RSS | USS | torch loaded |\n| --- | --- | --- | --- | --- |"
    print(f"Idle, {args.settle:.0f} s after start:\n\n{header}\n" + "\n".join(idle))
    print(f"\nAfter 20 semantic searches:\n\n{header}\n" + "\n".join(searched))


if __name__ == "__main__":
    main()
