"""Health checks of A2A agents, on the servers' schedule and with their states (servers/choices.py).

A check does what a client does before it talks to an agent: it fetches the agent card from the well-known
location of the agent's origin, then asks the agent's main interface for a task nobody has (`GetTask`, or
v0.3's `tasks/get`, over JSON-RPC; `GET .../tasks/{id}` over HTTP+JSON). Any answer in the binding's own
shape, "task not found" included, shows the interface is served. The registry's own credential for
the agent (the one credential resolver's: the shared headers, or the discovery connection an
administrator made for an agent that takes each user's) goes with both requests. A gRPC interface is
not probed: its card is.
"""

from __future__ import annotations

import time
from http import HTTPStatus
from urllib.parse import urlsplit

import httpx2
from django.conf import settings
from django.utils import timezone

from agents.choices import DEFAULT_TRANSPORT
from agents.models import Agent
from core.targets import TARGETS
from core.untrusted import InputRejected, json_loads
from servers.check_results import CheckResult
from servers.choices import HealthStatus
from servers.health import clip, connection_problem, header_problem, leaves, tls_context
from servers.upstream_auth import CredentialMissing, CredentialUnavailable

CARD_PATH = "/.well-known/agent-card.json"
PROBE_TASK = "registry-health-check"  # a task id no agent has: asked for, to see the interface answer
MAX_ANSWER_BYTES = 1 << 20


class _Failed(Exception):
    def __init__(self, status: str, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail


def card_url(agent_url: str) -> str:
    """Where A2A puts the card of the agent at `agent_url`: the well-known path of its origin."""
    parts = urlsplit(agent_url)
    return f"{parts.scheme}://{parts.netloc}{CARD_PATH}"


def check_agent(agent: Agent) -> CheckResult:
    """Check one agent from sync code (a Celery worker). Never raises; returns within about the health
    check timeout (each request gets what is left of it)."""
    timeout = float(settings.HEALTH_CHECK_TIMEOUT_SECONDS)
    try:  # the one credential resolver's answer for the registry's own requests (connections/resolver.py)
        headers = TARGETS.discovery_headers(agent)
    except CredentialMissing as missing:
        return CheckResult(HealthStatus.NEEDS_CONNECTION, str(missing))
    except CredentialUnavailable as unavailable:
        return CheckResult(HealthStatus.UNHEALTHY, clip(str(unavailable)))
    started = time.monotonic()
    if problem := header_problem(headers):
        return CheckResult(HealthStatus.UNHEALTHY, problem)
    try:
        with httpx2.Client(headers=headers, timeout=timeout, verify=tls_context()) as http:
            deadline = started + timeout
            _card(http, agent, deadline)
            detail = _interface(http, agent, deadline)
        status = HealthStatus.HEALTHY
    except _Failed as failed:
        status, detail = failed.status, failed.detail
    except httpx2.TimeoutException:
        status, detail = HealthStatus.UNHEALTHY, f"timed out after {timeout:g} s"
    except Exception as error:  # noqa: BLE001 — every failure is a result, as for servers
        problem = connection_problem(leaves(error))
        status, detail = HealthStatus.UNHEALTHY, problem or f"unexpected {type(error).__name__}: {error}"
    elapsed = time.monotonic() - started
    return CheckResult(
        status=status, detail=clip(detail), checked_at=timezone.now(), elapsed_ms=round(elapsed * 1000)
    )


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise httpx2.TimeoutException("deadline passed")
    return left


def _read(response: httpx2.Response, what: str):
    """The JSON of an answer, refusing credentials refused, errors and answers that are not JSON."""
    status = response.status_code
    if status in (401, 403):
        phrase = HTTPStatus(status).phrase
        raise _Failed(HealthStatus.AUTH_REFUSED, f"{status} {phrase} from the {what}: credentials refused")
    if 300 <= status < 400:
        where = response.headers.get("location", "nowhere")[:200]
        raise _Failed(HealthStatus.UNHEALTHY, f"HTTP {status} from the {what}: a redirect to {where}")
    content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
    if status >= 500 or (status >= 400 and "json" not in content_type):
        raise _Failed(HealthStatus.UNHEALTHY, f"HTTP {status} from the {what}")
    if "json" not in content_type:
        raise _Failed(HealthStatus.UNHEALTHY, f"the {what} did not answer JSON ({content_type or 'no type'})")
    if len(response.content) > MAX_ANSWER_BYTES:
        raise _Failed(HealthStatus.UNHEALTHY, f"the {what} answered more than {MAX_ANSWER_BYTES} bytes")
    try:
        return json_loads(response.content)
    except InputRejected:
        raise _Failed(HealthStatus.UNHEALTHY, f"the {what} answered JSON that cannot be read") from None


def _card(http: httpx2.Client, agent: Agent, deadline: float) -> None:
    url = card_url(agent.url)
    response = http.get(url, headers={"accept": "application/json"}, timeout=_remaining(deadline))
    if response.status_code == 404:
        raise _Failed(HealthStatus.UNHEALTHY, f"no agent card at {url} (HTTP 404)")
    card = _read(response, "agent card")
    if not isinstance(card, dict) or not isinstance(card.get("name"), str):
        raise _Failed(HealthStatus.UNHEALTHY, f"{url} is not an agent card (no name)")


def _interface(http: httpx2.Client, agent: Agent, deadline: float) -> str:
    """Ask the main interface for the probe task; what it served, for the check's detail."""
    binding = agent.preferred_transport or DEFAULT_TRANSPORT
    legacy = agent.protocol_version.startswith("0.")
    version = {} if legacy else {"A2A-Version": "1.0"}
    if binding == "JSONRPC":
        method = "tasks/get" if legacy else "GetTask"
        body = {"jsonrpc": "2.0", "id": PROBE_TASK, "method": method, "params": {"id": PROBE_TASK}}
        response = http.post(agent.url, json=body, headers=version, timeout=_remaining(deadline))
        answer = _read(response, "JSON-RPC interface")
        if (
            not isinstance(answer, dict)
            or answer.get("jsonrpc") != "2.0"
            or not {"result", "error"} & set(answer)
        ):
            raise _Failed(HealthStatus.UNHEALTHY, "the JSON-RPC interface did not answer JSON-RPC")
        return "card and JSON-RPC interface answered"
    if binding == "HTTP+JSON":
        url = f"{agent.url.rstrip('/')}{'/v1' if legacy else ''}/tasks/{PROBE_TASK}"
        response = http.get(url, headers=version, timeout=_remaining(deadline))
        _read(response, "HTTP+JSON interface")
        return "card and HTTP+JSON interface answered"
    return f"card answered ({binding} interface not probed)"
