"""Generated input against every operation of the published schemas, through the real Django stack and
the real database: our own schema (/api/schema/ of the registry and of the metrics service) with admin
credentials, and the official MCP Registry openapi.yaml for /v0.1 (every operation, writes included).
Every answer must be a non-5xx that matches the schema it was generated from. The examples are
derandomized, so a CI run is repeatable, and bounded (FUZZ_EXAMPLES per operation) so the whole file
takes a few minutes on 2 cores.

An operation's test is built when it runs, not when the file is collected (as `schema.parametrize()`
would): building one computes its coverage and example cases, about 8 s of a core for all operations, and
every worker of a parallel run collects every test but runs only its share."""

import base64
import fcntl
import json
import os
from collections import Counter
from pathlib import Path

import pytest
import schemathesis
from django.conf import settings
from django.core.wsgi import get_wsgi_application
from django.test import Client
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.generation.feedback import FeedbackSources
from schemathesis.pytest._test_builder import build_operation_test  # what schema.parametrize() builds with
from schemathesis.python._constants.orchestrator import make_constants_value_source
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    unsupported_method,
)

from metrics.services import api_key_create
from tests.factories import ServerFactory, UserFactory

pytestmark = pytest.mark.django_db

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "20"))
OFFICIAL_SPEC = Path(__file__).parent / "data" / "spec" / "openapi.yaml"
FUZZ = hypothesis_settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def success_schema_conformance(ctx, response, case):
    """The official spec's schema for 2xx answers. Its error bodies (`{"error": "<text>"}`) differ from
    the registry interface's `{"error": {"code", "message"}}`, which /v0.1 follows (docs/api.md)."""
    if response.status_code < 300:
        return response_schema_conformance(ctx, response, case)
    return None


# Our schema: never a 5xx, answers as documented (body and content type), 405 for undeclared methods.
# The credential matrix has tests of its own (these requests carry every credential at once), and whether
# a schema-valid request is accepted is not asked: the schema says what a parameter is, not which servers
# or agents exist.
OWN_CHECKS = [
    not_a_server_error,
    response_schema_conformance,
    content_type_conformance,
    unsupported_method,
]
# The official spec: never a 5xx, and successful answers exactly as it describes them.
OFFICIAL_CHECKS = [not_a_server_error, content_type_conformance, success_schema_conformance]
INTERNAL_PASSWORD = "fuzzing internal password"


class Credentials:
    """What each family of endpoints authenticates with: admin bearer token, session (with its CSRF
    token), internal Basic, metrics admin key."""

    def __init__(self, token: str, session: str, csrf: str, metrics_key: str):
        self.token, self.session, self.csrf, self.metrics_key = token, session, csrf, metrics_key

    def headers_for(self, path: str) -> tuple[dict, dict]:
        if path.startswith("/api/internal/"):
            basic = base64.b64encode(f"ops:{INTERNAL_PASSWORD}".encode()).decode()
            return {"Authorization": f"Basic {basic}"}, {}
        if path.startswith(("/metrics", "/rate-limit", "/admin/retention")):
            return {"X-API-Key": self.metrics_key}, {}
        if path.startswith("/v0.1/"):  # the official API's publishing takes a bearer token alone
            return {"Authorization": f"Bearer {self.token}"}, {}
        cookies = {settings.SESSION_COOKIE_NAME: self.session, settings.CSRF_COOKIE_NAME: self.csrf}
        return {"Authorization": f"Bearer {self.token}", "X-CSRFToken": self.csrf}, cookies


@pytest.fixture
def credentials(settings, token_for):
    settings.ADMIN_USER = "ops"
    settings.ADMIN_PASSWORD = INTERNAL_PASSWORD
    admin = UserFactory(username="fuzz-admin", is_superuser=True, is_staff=True)
    ServerFactory(path="/weather")
    UserFactory(username="registry-robot", is_service_account=True)
    settings.REGISTRY_SERVICE_ACCOUNT = "registry-robot"  # GET /api/admin/tokens has a token to give
    client = Client()
    client.force_login(admin)
    client.get("/api/tokens")  # sets the CSRF cookie
    return Credentials(
        token=token_for(admin),
        session=client.cookies[settings.SESSION_COOKIE_NAME].value,
        csrf=client.cookies[settings.CSRF_COOKIE_NAME].value,
        metrics_key=api_key_create(actor=None, service="fuzz", is_admin=True)[1],
    )


def _schema(urlconf: str | None = None):
    """The schema drf-spectacular publishes (as /api/schema/ serves it), run against the WSGI app."""
    from drf_spectacular.generators import SchemaGenerator

    document = SchemaGenerator(urlconf=urlconf).get_schema(request=None, public=True)
    schema = schemathesis.openapi.from_dict(document)
    schema.app = get_wsgi_application()
    return schema


registry = _schema()
metrics = _schema("registry_site.metrics_urls")
# Every operation of the official API, writes included (publish, PUT, DELETE, both status PATCHes). A PUT
# of a version is refused before its body is read (docs/api.md "OpenAPI schema"): its fuzzing phase sends
# bodies of every kind, but the coverage phase's 1,800 variants of a server.json would ask nothing more.
official = schemathesis.openapi.from_path(
    OFFICIAL_SPEC,
    config=SchemathesisConfig.from_dict(
        {
            "operations": [
                {
                    "include-name": "PUT /v0.1/servers/{serverName}/versions/{version}",
                    "phases": {"coverage": {"enabled": False}},
                }
            ]
        }
    ),
)
official.app = get_wsgi_application()


@pytest.fixture(autouse=True)
def _keep_the_test_connection(credentials):
    """As Django's test client does: the WSGI app must not close the connection holding the test's
    transaction between requests (after `credentials`, whose test client reconnects the signal)."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def metrics_urls(settings):
    settings.ROOT_URLCONF = "registry_site.metrics_urls"


SENT: dict[str, int] = {}  # requests per status class, reported to FUZZ_REPORT (a file) when it is set


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    if target := os.environ.get("FUZZ_REPORT"):  # added to what other workers of the run reported
        with open(target, "a+") as report:
            fcntl.flock(report, fcntl.LOCK_EX)
            report.seek(0)
            total = Counter(json.loads(report.read() or "{}")) + Counter(SENT)
            report.truncate(0)
            report.write(json.dumps(dict(total), indent=1, sort_keys=True))
        SENT.clear()  # a worker may run this module's tests in several spells, each reported once


def _call(case, credentials, **kwargs):
    headers, cookies = credentials.headers_for(case.operation.path)
    response = case.call(headers=headers, cookies=cookies)
    status = f"{response.status_code // 100}xx"
    SENT[status] = SENT.get(status, 0) + 1
    SENT["requests"] = SENT.get("requests", 0) + 1
    case.validate_response(response, **kwargs)


def _operations(schema) -> list:
    return [result.ok() for result in schema.get_all_operations()]


def _fuzz(schema, operation, credentials, checks) -> None:
    """Every phase schemathesis runs for `operation` (examples, fuzzing, coverage), as the test that
    `schema.parametrize()` would have built at collection."""

    @FUZZ
    def check(case):
        _call(case, credentials, checks=checks)

    test = build_operation_test(
        config=schema.config,
        operation=operation,
        test_func=check,
        given_kwargs={},
        feedback=FeedbackSources(constants_value_source=make_constants_value_source(schema)),
    )
    test()


def _label(operation) -> str:
    return operation.label


@pytest.mark.parametrize("operation", _operations(registry), ids=_label)
def test_registry_api_never_fails_and_answers_as_documented(operation, credentials):
    _fuzz(registry, operation, credentials, OWN_CHECKS)


@pytest.mark.parametrize("operation", _operations(metrics), ids=_label)
def test_metrics_api_never_fails_and_answers_as_documented(operation, credentials, metrics_urls):
    _fuzz(metrics, operation, credentials, OWN_CHECKS)


@pytest.mark.parametrize("operation", _operations(official), ids=_label)
def test_v01_answers_as_the_official_registry_spec_says(operation, credentials):
    _fuzz(official, operation, credentials, OFFICIAL_CHECKS)


def test_the_official_examples_are_published_and_their_status_changed(credentials):
    """Positive data: the publish examples of openapi.yaml are accepted as they are, and answered as it
    describes; so is a status change of what they published."""
    import yaml
    from django.test import Client

    from tests.servers.spec import validate_openapi

    spec = yaml.safe_load(OFFICIAL_SPEC.read_text())
    examples = spec["paths"]["/v0.1/publish"]["post"]["requestBody"]["content"]["application/json"][
        "examples"
    ]
    client = Client(headers={"Authorization": f"Bearer {credentials.token}"})
    for example in examples.values():
        # The examples leave out each package's `transport`, which Package requires (in openapi.yaml as
        # in server.json): as written they are refused for that, and accepted with it.
        refused = client.post("/v0.1/publish", example["value"], content_type="application/json")
        assert refused.json()["error"]["message"] == (
            'Not a valid server.json: packages[0]: "transport" is a required property'
        )
        document = example["value"] | {
            "packages": [
                package | {"transport": {"type": "stdio"}} for package in example["value"]["packages"]
            ]
        }

        published = client.post("/v0.1/publish", document, content_type="application/json")
        name = document["name"].replace("/", "%2F")
        status = client.patch(
            f"/v0.1/servers/{name}/versions/{document['version']}/status",
            {"status": "deprecated", "statusMessage": "Please upgrade to version 2.0.0"},
            content_type="application/json",
        )

        assert (published.status_code, status.status_code) == (200, 200), published.content
        assert published.json()["server"] == document
        validate_openapi(published.json(), "ServerResponse")
        validate_openapi(status.json(), "ServerResponse")
