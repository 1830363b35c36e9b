"""The registry's metrics client against a real HTTP receiver on loopback: batching, the key, retries,
drops (always counted and logged), the off switch, fork safety, and the metric each hook point sends.

Nothing is mocked: the receiver is a threaded `http.server` that records what arrives and answers as
each test tells it to."""

import hashlib
import json
import logging
import math
import os
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from core import metrics_client as metrics_client_module
from core.metrics_client import emit, reset_client
from servers.health import check_and_record
from tests.accounts import test_oidc_login
from tests.accounts.test_oidc_login import AUDIENCE, CLIENT_ID, CLIENT_SECRET
from tests.factories import AgentFactory, ServerFactory

# The `*_fixture` import registers time_server for this module.
from tests.mcp_servers import time_server_fixture  # noqa: F401
from tests.oidc.harness import client_credentials_token
from tests.search import semantic_fixtures

embedding_model = semantic_fixtures.embedding_model
provider = test_oidc_login.provider  # a real OpenID provider (npm's oidc-provider) on loopback
mapped_groups = test_oidc_login.mapped_groups

KEY = "registry-test-key"
LOGGER = "core.metrics_client"


@dataclass
class Received:
    path: str
    api_key: str | None
    content_type: str | None
    body: dict
    status: int
    at: float


class Receiver:
    """A metrics endpoint on loopback. `script` holds the answers to give, in order, as (status, headers,
    body); once it is empty every batch is answered 202 with everything accepted. While `gate` is a
    cleared Event, answers wait for it to be set (a slow service)."""

    def __init__(self):
        self.received: list[Received] = []
        self.script: list[tuple[int, dict, dict | None]] = []
        self.gate: threading.Event | None = None
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with receiver.lock:
                    status, headers, answer = receiver.script.pop(0) if receiver.script else (202, {}, None)
                    receiver.received.append(
                        Received(
                            self.path,
                            self.headers.get("X-API-Key"),
                            self.headers.get("Content-Type"),
                            body,
                            status,
                            time.monotonic(),
                        )
                    )
                if receiver.gate is not None:
                    receiver.gate.wait(10)
                if answer is None:
                    count = len(body["metrics"])
                    answer = {"accepted": count, "rejected": 0, "request_id": "req-1"}
                payload = json.dumps(answer).encode()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def stop(self):
        if self.gate is not None:
            self.gate.set()
        self.server.shutdown()
        self.server.server_close()

    def delivered(self) -> list[dict]:
        """Every metric of every batch the receiver answered with a 2xx."""
        with self.lock:
            return [m for r in self.received if r.status < 300 for m in r.body["metrics"]]

    def batches(self) -> list[Received]:
        with self.lock:
            return list(self.received)


@pytest.fixture
def receiver():
    running = Receiver()
    yield running
    running.stop()


def client_for(settings, url: str, **options):
    """A fresh process-wide client posting to `url` with KEY (fast retries unless told otherwise)."""
    settings.METRICS_SERVICE_URL = url
    settings.METRICS_API_KEY = KEY
    return reset_client(**{"backoff": 0.05, "flush_interval": 0.2, **options})


@pytest.fixture
def make_client(settings):
    """Build clients with `client_for`; each is closed before the settings are put back."""
    made = []

    def make(url, **options):
        made.append(client_for(settings, url, **options))
        return made[-1]

    yield make
    for client in made:
        client.close(timeout=5)
    reset_client()


def wait_until(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the metrics client")
        time.sleep(0.01)


def refused_url() -> tuple[socket.socket, str]:
    """A loopback port that is bound but never listens: every connection is refused."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock, f"http://127.0.0.1:{sock.getsockname()[1]}"


def warnings_of(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]


# -- the client ----------------------------------------------------------------------------------------


def test_emits_arrive_in_batches_of_at_most_the_batch_size_each_once_with_the_key(receiver, make_client):
    client = make_client(receiver.url, batch_size=50, max_per_post=50, flush_interval=1.0)
    before = time.time()

    for n in range(120):
        emit("custom", duration_ms=n / 10, dimensions={"n": n})
    wait_until(lambda: client.sent == 120)

    batches = receiver.batches()
    assert [len(b.body["metrics"]) for b in batches] == [50, 50, 20]
    assert {(b.path, b.api_key, b.content_type) for b in batches} == {("/metrics", KEY, "application/json")}
    assert [set(b.body) for b in batches] == [{"service", "version", "metrics"}] * 3
    assert {(b.body["service"], b.body["version"]) for b in batches} == {("registry", "0.1.0")}
    delivered = receiver.delivered()
    assert [m["dimensions"] for m in delivered] == [{"n": n} for n in range(120)]
    assert delivered[7] == {
        "type": "custom",
        "value": 1.0,
        "duration_ms": 0.7,
        "timestamp": delivered[7]["timestamp"],
        "dimensions": {"n": 7},
        "metadata": {},
    }
    assert all(before <= m["timestamp"] <= time.time() for m in delivered)
    assert (client.sent, client.dropped) == (120, 0)


def test_a_burst_is_sent_without_waiting_in_posts_of_at_most_max_per_post(receiver, make_client):
    client = make_client(receiver.url, flush_interval=30)  # only full batches can be sent in time

    for n in range(2500):
        emit("custom", dimensions={"n": n})
    client.close(timeout=5)

    sizes = [len(b.body["metrics"]) for b in receiver.batches()]
    assert max(sizes) <= 1000 and sum(sizes) == 2500
    assert [m["dimensions"]["n"] for m in receiver.delivered()] == list(range(2500))
    assert (client.sent, client.dropped) == (2500, 0)


def test_metadata_and_a_missing_duration_are_sent_as_given(receiver, make_client):
    client = make_client(receiver.url)

    emit("health_check", value=2, dimensions={"server": "/a"}, metadata={"why": "test"})
    client.close(timeout=5)

    [metric] = receiver.delivered()
    assert metric == {
        "type": "health_check",
        "value": 2.0,
        "timestamp": metric["timestamp"],
        "dimensions": {"server": "/a"},
        "metadata": {"why": "test"},
    }


def test_a_500_is_retried_and_the_batch_delivered_once(receiver, make_client, caplog):
    client = make_client(receiver.url)
    receiver.script = [(500, {}, {"detail": "down"})]

    emit("custom", dimensions={"n": 1})
    wait_until(lambda: client.sent == 1)

    first, second = receiver.batches()
    assert (first.status, second.status) == (500, 202)
    assert first.body == second.body
    assert receiver.delivered() == first.body["metrics"]
    assert (client.sent, client.dropped) == (1, 0)
    assert warnings_of(caplog) == []


def test_a_429_waits_for_its_retry_after(receiver, make_client):
    client = make_client(receiver.url, backoff=0.01)
    receiver.script = [(429, {"Retry-After": "0.5"}, {"detail": "slow down"})]

    emit("custom", dimensions={"n": 1})
    wait_until(lambda: client.sent == 1)

    first, second = receiver.batches()
    assert second.at - first.at >= 0.5
    assert (client.sent, client.dropped) == (1, 0)


def test_a_retry_after_is_capped(receiver, make_client):
    client = make_client(receiver.url, retry_after_cap=0.2)
    receiver.script = [(429, {"Retry-After": "3600"}, {"detail": "slow down"})]

    emit("custom", dimensions={"n": 1})
    wait_until(lambda: client.sent == 1, timeout=3)

    first, second = receiver.batches()
    assert 0.2 <= second.at - first.at < 3  # not an hour


def test_a_service_that_stays_down_costs_the_batch_with_a_warning_and_the_running_count(make_client, caplog):
    sock, url = refused_url()
    client = make_client(url, attempts=3, batch_size=5)
    caplog.set_level(logging.WARNING, LOGGER)

    for n in range(5):
        emit("custom", dimensions={"n": n})
    wait_until(lambda: client.dropped == 5 and len(warnings_of(caplog)) == 1)  # counted first, then said
    for n in range(5):
        emit("custom", dimensions={"n": n})
    wait_until(lambda: client.dropped == 10 and len(warnings_of(caplog)) == 2)
    sock.close()

    first, second = warnings_of(caplog)
    assert first.startswith("Dropped 5 metric(s) (ConnectionError: ")
    assert first.endswith(f", after 3 attempt(s) to {url}/metrics); 5 dropped by this process so far.")
    assert second.endswith("; 10 dropped by this process so far.")
    assert (client.sent, client.dropped) == (0, 10)


def test_5xx_answers_are_retried_a_bounded_number_of_times_then_dropped(receiver, make_client, caplog):
    client = make_client(receiver.url, attempts=3)
    receiver.script = [(503, {}, {"detail": "busy"})] * 3

    emit("custom", dimensions={"n": 1})
    emit("custom", dimensions={"n": 2})
    wait_until(lambda: client.dropped == 2 and warnings_of(caplog))  # counted first, then said

    assert [b.status for b in receiver.batches()] == [503, 503, 503]
    assert warnings_of(caplog) == [
        f"Dropped 2 metric(s) (HTTP 503, after 3 attempt(s) to {receiver.url}/metrics); "
        "2 dropped by this process so far."
    ]
    assert (client.sent, client.dropped) == (0, 2)


def test_a_refused_key_is_not_retried_and_the_answer_is_logged(receiver, make_client, caplog):
    client = make_client(receiver.url)
    receiver.script = [(401, {}, {"error": "invalid API key"})]

    emit("custom", dimensions={"n": 1})
    wait_until(lambda: client.dropped == 1 and warnings_of(caplog))
    time.sleep(0.2)  # no retry comes

    assert len(receiver.batches()) == 1
    assert warnings_of(caplog) == [
        'Dropped 1 metric(s) (HTTP 401: {"error": "invalid API key"}); 1 dropped by this process so far.'
    ]
    assert (client.sent, client.dropped) == (0, 1)


def test_metrics_the_service_rejects_count_as_dropped(receiver, make_client, caplog):
    client = make_client(receiver.url)
    error = {"index": 1, "field": "type", "message": "Unknown type"}
    receiver.script = [(202, {}, {"accepted": 1, "rejected": 1, "request_id": "r", "errors": [error]})]

    emit("custom", dimensions={"n": 1})
    emit("nonsense", dimensions={"n": 2})
    wait_until(lambda: client.dropped == 1 and warnings_of(caplog))

    assert (client.sent, client.dropped) == (1, 1)
    assert warnings_of(caplog) == [
        f"Dropped 1 metric(s) (rejected by the service: {[error]}); 1 dropped by this process so far."
    ]


def test_a_too_large_batch_is_sent_again_in_halves(receiver, make_client):
    client = make_client(receiver.url, batch_size=4, max_per_post=4)
    receiver.script = [(413, {}, {"detail": "too large"})]

    for n in range(4):
        emit("custom", dimensions={"n": n})
    wait_until(lambda: client.sent == 4)

    assert [(b.status, len(b.body["metrics"])) for b in receiver.batches()] == [(413, 4), (202, 2), (202, 2)]
    assert [m["dimensions"]["n"] for m in receiver.delivered()] == [0, 1, 2, 3]


def test_a_full_queue_drops_and_counts_without_blocking_the_caller(receiver, make_client, caplog):
    client = make_client(receiver.url, queue_size=3, batch_size=1)
    receiver.gate = threading.Event()  # the service is slow: the thread waits on the first POST

    emit("custom", dimensions={"n": 0})
    wait_until(lambda: len(receiver.batches()) == 1)
    started = time.perf_counter()
    for n in range(1, 6):
        emit("custom", dimensions={"n": n})
    elapsed = time.perf_counter() - started
    receiver.gate.set()
    wait_until(lambda: client.sent == 4)

    assert elapsed < 0.5  # the gate holds the thread for up to 10 s: nobody waited for it
    assert (client.sent, client.dropped) == (4, 2)
    assert [m["dimensions"]["n"] for m in receiver.delivered()] == [0, 1, 2, 3]
    assert warnings_of(caplog) == [
        "Dropped 1 metric(s) (the queue of 3 is full); 1 dropped by this process so far."
    ]  # the second drop is counted; its warning is throttled


def test_close_sends_what_is_queued_without_waiting_for_the_interval(receiver, make_client):
    client = make_client(receiver.url, flush_interval=30)

    for n in range(3):
        emit("custom", dimensions={"n": n})
    started = time.monotonic()
    client.close(timeout=5)

    assert time.monotonic() - started < 2
    assert [m["dimensions"]["n"] for m in receiver.delivered()] == [0, 1, 2]


def test_without_a_key_nothing_is_sent_and_that_is_said_once(receiver, settings, caplog):
    settings.METRICS_SERVICE_URL = receiver.url
    settings.METRICS_API_KEY = ""
    client = reset_client()
    caplog.set_level(logging.INFO, LOGGER)

    emit("custom", dimensions={"n": 1})
    emit("custom", dimensions={"n": 2})
    time.sleep(0.2)

    assert receiver.batches() == []
    assert client._thread is None  # no thread was started
    assert (client.sent, client.dropped) == (0, 0)
    assert [r.getMessage() for r in caplog.records if r.name == LOGGER] == [
        "Metrics reporting is off: METRICS_API_KEY is not set."
    ]


def test_a_forked_child_sends_its_own_metrics_and_not_its_parents(receiver, make_client):
    client = make_client(receiver.url, flush_interval=30)
    emit("custom", dimensions={"from": "parent"})  # starts the parent's thread; waits in its queue

    pid = os.fork()
    if pid == 0:  # the child: what a Celery prefork worker does after the fork
        code = 1
        try:
            emit("custom", dimensions={"from": "child"})
            metrics_client_module._client.close(timeout=5)
            child = metrics_client_module._client
            code = 0 if (child.sent, child.dropped, child._pid) == (1, 0, os.getpid()) else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert [b.body["metrics"][0]["dimensions"] for b in receiver.batches()] == [{"from": "child"}]

    client.close(timeout=5)
    assert [m["dimensions"] for m in receiver.delivered()] == [{"from": "child"}, {"from": "parent"}]
    assert (client.sent, client.dropped) == (1, 0)


def test_emit_never_raises(receiver, make_client, caplog):
    client = make_client(receiver.url)

    emit("custom", value="not a number", dimensions={"n": 1})

    assert client.dropped == 1
    assert "Could not queue a metric." in [r.getMessage() for r in caplog.records]


# -- the hook points -----------------------------------------------------------------------------------


def hashed(username: str) -> str:
    return hashlib.sha256(username.encode()).hexdigest()[:16]


@pytest.fixture
def timer(member, scope_factory):
    ServerFactory(path="/currenttime")
    scope_factory(
        "time-exec",
        group="timers",
        server_rules=[{"server": "currenttime", "methods": ["initialize", "tools/list"], "tools": []}],
    )
    return member("tim", "timers")


def validate(client, token=None, url="/currenttime/mcp"):
    headers = {"X-Original-URL": url, "X-Original-Method": "GET"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return client.get("/validate", headers=headers)


@pytest.mark.django_db
def test_validate_reports_one_auth_request_with_the_server_and_a_hashed_user(
    receiver, make_client, client, timer, token_for
):
    metrics = make_client(receiver.url)
    token = token_for(timer)

    allowed = validate(client, token)
    denied = validate(client, token, url="/weather/mcp")
    anonymous = validate(client)
    bad = validate(client, "not-a-token")
    metrics.close(timeout=5)

    assert [r.status_code for r in (allowed, denied, anonymous, bad)] == [200, 403, 401, 401]
    delivered = receiver.delivered()
    assert {m["type"] for m in delivered} == {"auth_request"}
    assert [m["dimensions"] for m in delivered] == [
        {"success": True, "method": "jwt", "server": "/currenttime", "user_hash": hashed("tim")},
        {"success": False, "method": "jwt", "server": "/weather", "user_hash": hashed("tim")},
        {"success": False, "method": "noauth", "server": "/currenttime", "user_hash": ""},
        {"success": False, "method": "jwt", "server": "/currenttime", "user_hash": ""},
    ]
    assert [m["metadata"] for m in delivered] == [{"auth_method": "jwt"}] * 2 + [{}] * 2
    assert all(0 < m["duration_ms"] < 5000 for m in delivered)


def test_an_identity_provider_token_is_reported_as_oauth(receiver, make_client, client, provider):
    # A real OpenID provider's client-credentials token; its scope grants no MCP server.
    ServerFactory(path="/currenttime")
    good = client_credentials_token(
        provider, client_id=CLIENT_ID, client_secret=CLIENT_SECRET, resource=AUDIENCE
    )
    foreign = client_credentials_token(
        provider, client_id=CLIENT_ID, client_secret=CLIENT_SECRET, resource="urn:other"
    )
    metrics = make_client(receiver.url)

    denied = validate(client, good)
    refused = validate(client, foreign)
    metrics.close(timeout=5)

    assert (denied.status_code, refused.status_code) == (403, 401)
    assert [m["dimensions"] for m in receiver.delivered()] == [
        {"success": False, "method": "oauth", "server": "/currenttime", "user_hash": hashed(CLIENT_ID)},
        {"success": False, "method": "oauth", "server": "/currenttime", "user_hash": ""},
    ]
    assert receiver.delivered()[0]["metadata"] == {"auth_method": "oidc"}


@pytest.mark.django_db
def test_a_bearer_token_on_the_api_reports_an_auth_request_without_a_server(
    receiver, make_client, client, timer, token_for
):
    metrics = make_client(receiver.url)

    response = client.get("/v0.1/servers", headers={"Authorization": f"Bearer {token_for(timer)}"})
    metrics.close(timeout=5)

    assert response.status_code == 200
    [metric] = receiver.delivered()
    assert (metric["type"], metric["dimensions"]) == (
        "auth_request",
        {"success": True, "method": "jwt", "server": "", "user_hash": hashed("tim")},
    )


@pytest.mark.django_db
def test_a_semantic_search_reports_tool_discovery_with_its_times(
    receiver, make_client, client, embedding_model
):
    from search.services import agents_embed

    AgentFactory(path="/fx", name="FX", description="Converts currencies", is_enabled=True)
    agents_embed()
    metrics = make_client(receiver.url)

    response = client.post("/api/agents/discover/semantic?query=convert+dollars+to+euros&max_results=5")
    metrics.close(timeout=5)

    assert response.status_code == 200
    [metric] = receiver.delivered()
    dims = metric["dimensions"]
    assert metric["type"] == "tool_discovery"
    assert metric["metadata"] == {"entity_types": ["a2a_agent"]}
    assert {k: dims[k] for k in ("query", "results_count", "top_k", "top_n")} == {
        "query": "convert dollars to euros",
        "results_count": 1,
        "top_k": 5,
        "top_n": None,
    }
    assert dims["embedding_time_ms"] > 0 and dims["search_time_ms"] > 0
    assert metric["duration_ms"] == pytest.approx(dims["embedding_time_ms"] + dims["search_time_ms"], abs=1)


@pytest.mark.django_db
def test_a_health_check_reports_its_status_tools_and_duration(receiver, make_client, time_server):
    server = ServerFactory(proxy_pass_url=time_server)
    metrics = make_client(receiver.url)

    result = check_and_record(server.pk)
    metrics.close(timeout=5)

    [metric] = receiver.delivered()
    assert (metric["type"], metric["dimensions"]) == (
        "health_check",
        {"server": server.path, "status": "healthy", "num_tools": 3},
    )
    # elapsed_ms is the probe's time rounded to a whole ms; the metric's duration encloses the probe
    assert result.elapsed_ms <= math.ceil(metric["duration_ms"]) and metric["duration_ms"] < 10_000
