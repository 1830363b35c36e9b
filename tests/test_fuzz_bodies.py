"""Generated bodies (hypothesis) for the two write paths that take the most free-form input: metrics
ingestion, where every accepted metric must be stored (accepted == stored, always), and server
registration (the internal API's JSON and the dashboard's form), where every body is either registered
and readable back or refused with a 4xx that changed nothing. Never a 5xx."""

import base64
import itertools
import json
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from metrics.models import METRIC_TABLES
from metrics.services import api_key_create, metrics_flush
from servers.models import Server
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

FUZZ = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
PASSWORD = "fuzzing internal password"

# Text as hostile clients send it: ordinary, empty, long, NUL, lone surrogates, control characters.
hostile_text = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        ["", "\x00", "a\x00b", "\ud800", "x\udfff", "\u202e", "é" * 300, "s" * 256, "/" + "p" * 300]
    ),
)
numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.sampled_from([0, 1, 2**31, 2**63, 10**400]),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, hostile_text)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(hostile_text, children, max_size=4)
    ),
    max_leaves=12,
)
KINDS = [
    "auth_request",
    "tool_execution",
    "tool_discovery",
    "protocol_latency",
    "health_check",
    "registry_operation",
    "custom",
]
dimension_values = {
    "success": st.one_of(st.booleans(), scalars),
    "method": st.one_of(st.sampled_from(["jwt", "oauth", "noauth", "tools/call", "tools/list"]), scalars),
    "server": hostile_text,
    "user_hash": hostile_text,
    "tool_name": hostile_text,
    "client_name": hostile_text,
    "query": hostile_text,
    "results_count": numbers,
    "top_k": numbers,
    "input_size_bytes": numbers,
    "output_size_bytes": numbers,
    "embedding_time_ms": numbers,
    "flow_step": st.one_of(st.sampled_from(["initialize", "discovery", "tool_execution"]), scalars),
}
metrics = st.fixed_dictionaries(
    {"type": st.one_of(st.sampled_from(KINDS), scalars), "value": st.one_of(numbers, scalars)},
    optional={
        "duration_ms": st.one_of(numbers, scalars),
        "timestamp": st.one_of(st.none(), numbers, hostile_text),
        "dimensions": st.one_of(st.fixed_dictionaries({}, optional=dimension_values), json_values),
        "metadata": json_values,
    },
)


# Metrics of a known kind whose dimensions are hostile: most pass validation or fail one field, so the
# batches mix accepted and rejected metrics (the case where a poison metric could hold valid ones back).
typed_metrics = st.fixed_dictionaries(
    {
        "type": st.sampled_from(KINDS),
        "value": st.floats(min_value=0, max_value=1e9),
        "dimensions": st.fixed_dictionaries(
            {
                "success": st.booleans(),
                "method": st.sampled_from(["jwt", "tools/call"]),
                "flow_step": st.sampled_from(["initialize", "discovery"]),
            },
            optional={
                k: v for k, v in dimension_values.items() if k not in ("success", "method", "flow_step")
            },
        ),
    },
    optional={"duration_ms": st.floats(min_value=0, max_value=1000), "metadata": json_values},
)
SERVICES = itertools.count()


def stored() -> int:
    return sum(model.objects.count() for model in METRIC_TABLES.values())


@FUZZ
@given(
    batch=st.lists(st.one_of(typed_metrics, typed_metrics, metrics, json_values), min_size=1, max_size=8),
    version=st.one_of(st.just("1.0.0"), hostile_text),
)
def test_every_metric_accepted_is_stored(client, settings, batch, version):
    settings.ROOT_URLCONF = "registry_site.metrics_urls"
    service = f"fuzz-{next(SERVICES)}"
    key = api_key_create(actor=None, service=service)[1]
    before = stored()
    body = json.dumps({"service": service, "version": version, "metrics": batch}, ensure_ascii=True)

    response = client.post("/metrics", body, content_type="application/json", HTTP_X_API_KEY=key)
    metrics_flush()

    event(f"status {response.status_code}")
    assert response.status_code in (202, 400, 422), response.content
    answer = response.json()
    accepted = answer["accepted"] if response.status_code == 202 else 0
    if response.status_code == 202:
        assert answer["accepted"] + answer["rejected"] == len(batch)
    assert stored() - before == accepted


def mostly(value, strategy):
    """`value` three times in four, otherwise anything `strategy` makes."""
    return st.one_of(st.just(value), st.just(value), st.just(value), strategy)


def _basic() -> dict:
    return {"HTTP_AUTHORIZATION": "Basic " + base64.b64encode(f"ops:{PASSWORD}".encode()).decode()}


registrations = st.fixed_dictionaries(
    {
        "path": mostly("/fuzzed", st.one_of(st.sampled_from(["fuzzed", "/Team/Fuzzed/"]), hostile_text)),
        "name": mostly("Fuzzed", hostile_text),
        "description": mostly("A fuzzed server", hostile_text),
        "proxy_pass_url": mostly("http://127.0.0.1:9/mcp", hostile_text),
    },
    optional={
        "tags": mostly(["fuzz"], st.one_of(hostile_text, st.lists(hostile_text, max_size=4), json_values)),
        "headers": mostly(
            {"X-Key": "v"}, st.one_of(st.dictionaries(hostile_text, hostile_text, max_size=3), json_values)
        ),
        "tool_list": st.one_of(
            st.lists(st.dictionaries(hostile_text, json_values, max_size=4), max_size=3), json_values
        ),
        "supported_transports": st.one_of(
            st.sampled_from(["sse", "streamable-http", "stdio,sse"]), json_values
        ),
        "num_tools": numbers,
        "overwrite": st.one_of(st.booleans(), scalars),
        "version": hostile_text,
    },
)


@FUZZ
@given(body=registrations)
def test_a_json_registration_is_stored_and_readable_or_refused_unchanged(client, settings, body):
    settings.ADMIN_USER, settings.ADMIN_PASSWORD = "ops", PASSWORD
    before = set(Server.objects.values_list("path", "updated_at"))

    response = client.post(
        "/api/internal/register",
        json.dumps(body, ensure_ascii=True),
        content_type="application/json",
        **_basic(),
    )

    event(f"status {response.status_code}")
    assert response.status_code in (200, 201, 400, 409, 422), response.content
    if response.status_code in (200, 201):
        path = response.json()["service"]["path"]
        listed = client.get("/api/internal/list", **_basic()).json()["services"]
        assert path in [service["path"] for service in listed]
        Server.objects.filter(path=path).delete()  # the next example starts from the same registry
    else:
        assert set(Server.objects.values_list("path", "updated_at")) == before


form_values = st.fixed_dictionaries(
    {
        "path": mostly("formed", hostile_text),
        "name": mostly("Formed", hostile_text),
        "description": mostly("d", hostile_text),
        "proxy_pass_url": mostly("http://127.0.0.1:9/mcp", hostile_text),
    },
    optional={
        "tags": hostile_text,
        "num_tools": hostile_text,
        "license": hostile_text,
        "headers": hostile_text,
    },
)


@FUZZ
@given(form=form_values)
def test_a_register_form_is_stored_or_refused_unchanged(client, form):
    admin = UserFactory(username="form-admin", is_superuser=True)
    client.force_login(admin)
    before = Server.objects.count()

    encoded = urlencode(form, encoding="utf-8", errors="surrogatepass")  # lone surrogates as raw bytes

    response = client.post(
        "/api/register",
        encoded,
        content_type="application/x-www-form-urlencoded",
        HTTP_ACCEPT="application/json",
    )

    event(f"status {response.status_code}")
    assert response.status_code in (201, 400, 409, 422), response.content
    if response.status_code == 201:
        Server.objects.filter(path=response.json()["service"]["path"]).delete()
    else:
        assert Server.objects.count() == before
