"""`skills/list` of 1,000 skills through a virtual server (gateway/virtual/skills.py), end to end over
HTTP against `manage.py serve` on its embedded PostgreSQL and Redis: a caller with a scope rule (not an
administrator, so the visibility rule applies) walks the whole list, 100 skills a page, in one session.

Reported: the first walk after a start (the process reads the skills once), then p50 and p99 of one page
and of the whole walk (10 pages), and for scale the same session's `ping`.

Run: .venv/bin/python bench/skills.py [--skills 1000] [--walks 200]
"""

import argparse
import json
import tempfile
import time
from pathlib import Path

import requests
from common import Serve, free_port, manage, ms, registry_env

SEED = """
import hashlib
from django.contrib.auth.models import Group
from accounts.choices import AuthMethod
from accounts.models import Scope, User
from accounts.principal import principal_for_user
from accounts.services import user_token_issue
from skills.archives import digest_of
from skills.models import Skill, SkillFile, SkillVersion
from virtual_servers.services import virtual_server_create

count = {count}
skills = Skill.objects.bulk_create(
    [Skill(path=f"/skill-{n:04d}", name=f"skill-{n:04d}", description=f"Benchmark skill {n}: does one thing.",
           embedding_dirty=False) for n in range(count)], batch_size=1000)
versions, files = [], []
for skill in skills:
    content = {
        "SKILL.md": f"---\\nname: {skill.name}\\ndescription: {skill.description}\\n---\\n\\nSteps.\\n".encode(),
        "scripts/run.py": b"print('run')\\n",
        "references/guide.md": b"# Guide\\n\\nRead me.\\n",
    }
    listing = [{"path": p, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()} for p, d in sorted(content.items())]
    version = SkillVersion(skill=skill, digest=digest_of(listing), archive_sha256="0" * 64, files=listing,
                           frontmatter={"name": skill.name, "description": skill.description}, status="approved")
    versions.append(version)
    files += [(version, entry, content[entry["path"]]) for entry in listing]
SkillVersion.objects.bulk_create(versions, batch_size=1000)
SkillFile.objects.bulk_create([SkillFile(version=v, path=e["path"], size=e["size"], sha256=e["sha256"], content=d)
                               for v, e, d in files], batch_size=2000)
for skill, version in zip(skills, versions):
    skill.approved = version
Skill.objects.bulk_update(skills, ["approved"], batch_size=1000)
virtual_server_create(actor=None, path="/kit", definition={"name": "Kit", "skills": [s.path for s in skills]})
group = Group.objects.create(name="bench")
scope = Scope.objects.create(name="bench", server_rules=[{"server": "/kit", "methods": ["*"], "tools": ["*"]}])
scope.groups.add(group)
user = User.objects.create(username="bench-user")
user.groups.add(group)
grant = user_token_issue(principal=principal_for_user(user, auth_method=AuthMethod.SESSION),
                         requested_scopes=None, expires_in_hours=2, description="bench")
print(grant.access_token)
"""
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def call(session: requests.Session, url: str, method: str, params: dict | None = None) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    answer = session.post(url, data=json.dumps(body), timeout=30)
    assert answer.status_code == 200, answer.text[:300]
    return answer.json()["result"]


def walk(session: requests.Session, url: str, pages: list[float]) -> int:
    cursor, seen = None, 0
    while True:
        started = time.perf_counter()
        result = call(session, url, "skills/list", {"cursor": cursor} if cursor else {})
        pages.append(time.perf_counter() - started)
        seen += len(result["skills"])
        cursor = result.get("nextCursor")
        if cursor is None:
            return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--walks", type=int, default=200)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        env = registry_env(Path(tmp) / "var", port)
        manage(env, "migrate", "--verbosity", "0")
        token = manage(env, "shell", "-c", SEED.replace("{count}", str(arguments.skills))).strip().splitlines()[-1]
        with Serve(env, port):
            url = f"http://127.0.0.1:{port}/kit/mcp"
            session = requests.Session()
            session.headers.update({**HEADERS, "Authorization": f"Bearer {token}"})
            opened = session.post(
                url,
                data=json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": 0,
                        "method": "initialize",
                        "params": {
                            "protocolVersion": "2025-11-25",
                            "capabilities": {},
                            "clientInfo": {"name": "bench", "version": "1"},
                        },
                    }
                ),
                timeout=30,
            )
            session.headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
            started = time.perf_counter()
            assert walk(session, url, []) == arguments.skills
            first = time.perf_counter() - started
            pages, walks, pings = [], [], []
            for _ in range(arguments.walks):
                started = time.perf_counter()
                walk(session, url, pages)
                walks.append(time.perf_counter() - started)
                started = time.perf_counter()
                call(session, url, "ping")
                pings.append(time.perf_counter() - started)
    print(f"skills/list of {arguments.skills} skills through a virtual server, {arguments.walks} walks\n")
    print("| request | p50 ms | p99 ms |")
    print("|---|---|---|")
    print(f"| the first walk after a start ({arguments.skills // 100} pages) | {first * 1000:.1f} | |")
    print(f"| one page of 100 skills | {ms(pages):.2f} | {ms(pages, 99):.2f} |")
    print(f"| the whole list ({arguments.skills // 100} pages) | {ms(walks):.1f} | {ms(walks, 99):.1f} |")
    print(f"| ping, for scale | {ms(pings):.2f} | {ms(pings, 99):.2f} |")


if __name__ == "__main__":
    main()
