"""Publishing and the lifecycle over real HTTP, with the exact requests of the official `mcp-publisher`
(tests/catalog/publisher.py), and real server.json documents from public repositories."""

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from catalog.models import ServerVersion
from tests.catalog.publisher import Publisher, path_escape
from tests.servers.spec import validate_server_list, validate_server_response

pytestmark = pytest.mark.django_db(transaction=True)

SAMPLES = json.loads((Path(__file__).parents[1] / "data" / "server-json-samples.json").read_text())[
    "documents"
]
OFFICIAL = "io.modelcontextprotocol.registry/official"


def _distinct(samples):
    seen, kept = set(), []
    for sample in samples:
        key = (sample["document"].get("name"), sample["document"].get("version"))
        if key not in seen:
            seen.add(key)
            kept.append(sample)
    return kept


VALID = _distinct(s for s in SAMPLES if s["valid_2025_12_11"])
INVALID = [s for s in SAMPLES if not s["valid_2025_12_11"]]


@pytest.fixture
def publisher(live_server, member, token_for):
    return Publisher(live_server.url, token_for(member("ada", "mcp-registry-admin")))


def _read(live_server, publisher, name, version, **params):
    url = f"{live_server.url}/v0.1/servers/{path_escape(name)}/versions/{path_escape(version)}"
    return requests.get(
        url, params=params, headers={"Authorization": f"Bearer {publisher.token}"}, timeout=10
    )


def _doc(name="com.acme/weather", version="1.0.0", **fields):
    return {"name": name, "description": "Weather for any city", "version": version} | fields


def test_every_real_document_is_published_and_read_back_exactly_as_sent(live_server, publisher):
    assert len(VALID) >= 60  # npm, pypi, oci, nuget, mcpb and cargo packages, remotes, icons, _meta
    for sample in VALID:
        document = sample["document"]

        published = publisher.publish(document)

        assert published.status_code == 200, (sample["path"], published.text)
        validate_server_response(published.json())
        assert published.json()["server"] == document
        read = _read(live_server, publisher, document["name"], document["version"])
        assert read.status_code == 200
        assert read.json()["server"] == document, sample["path"]
    assert ServerVersion.objects.count() == len(VALID)


def test_documents_that_fail_the_schema_are_refused_with_the_reason_and_nothing_is_stored(publisher):
    assert len(INVALID) >= 20
    for sample in INVALID:
        refused = publisher.publish(sample["document"])

        assert refused.status_code == 400, (sample["path"], refused.text)
        assert refused.json()["error"]["code"] == "INVALID_PARAMETER"
        assert refused.json()["error"]["message"].startswith("Not a valid server.json: "), refused.text
    assert ServerVersion.objects.count() == 0


def test_the_latest_version_follows_the_official_rule(live_server, publisher):
    for version in ("1.2.0", "1.10.0-beta.1", "1.10.0", "1.9.9", "2024.06-custom"):
        assert publisher.publish(_doc(version=version)).status_code == 200

    latest = _read(live_server, publisher, "com.acme/weather", "latest").json()
    versions = publisher.all_versions("com.acme/weather").json()

    assert latest["server"]["version"] == "1.10.0"  # semantic beats text, a release beats its pre-release
    assert [entry["server"]["version"] for entry in versions["servers"]] == [
        "2024.06-custom",  # newest published first
        "1.9.9",
        "1.10.0",
        "1.10.0-beta.1",
        "1.2.0",
    ]
    assert [e["_meta"][OFFICIAL]["isLatest"] for e in versions["servers"]] == [
        False,
        False,
        True,
        False,
        False,
    ]
    validate_server_list(versions)


def test_the_lifecycle_with_mcp_publisher_status(live_server, publisher):
    for version in ("1.0.0", "1.1.0", "2.0.0"):
        publisher.publish(_doc(version=version))

    deprecated = publisher.status("com.acme/weather", "1.0.0", "deprecated", "Please upgrade to 2.0.0")
    deleted = publisher.status("com.acme/weather", "2.0.0", "deleted", "Critical vulnerability")

    assert (deprecated.status_code, deleted.status_code) == (200, 200)
    assert deprecated.json()["_meta"][OFFICIAL] | {
        "statusChangedAt": "",
        "publishedAt": "",
        "updatedAt": "",
    } == {
        "status": "deprecated",
        "statusMessage": "Please upgrade to 2.0.0",
        "isLatest": False,
        "statusChangedAt": "",
        "publishedAt": "",
        "updatedAt": "",
    }
    validate_server_response(deleted.json())
    # The deleted version leaves listings and the version list; the latest moves to 1.1.0.
    assert _read(live_server, publisher, "com.acme/weather", "latest").json()["server"]["version"] == "1.1.0"
    assert _read(live_server, publisher, "com.acme/weather", "2.0.0").status_code == 404
    assert (
        _read(live_server, publisher, "com.acme/weather", "2.0.0", include_deleted="true").status_code == 200
    )
    listed = requests.get(
        f"{live_server.url}/v0.1/servers", headers={"Authorization": f"Bearer {publisher.token}"}, timeout=10
    ).json()
    assert [e["server"]["version"] for e in listed["servers"]] == ["1.0.0", "1.1.0"]
    # Restoring it makes it the latest again; asking for the status it has is "no changes".
    assert publisher.status("com.acme/weather", "2.0.0", "active").status_code == 200
    assert _read(live_server, publisher, "com.acme/weather", "latest").json()["server"]["version"] == "2.0.0"
    again = publisher.status("com.acme/weather", "2.0.0", "active")
    assert (again.status_code, again.json()["error"]["message"]) == (
        400,
        "No changes to apply: status is already active",
    )


def test_every_version_at_once_with_all_versions(live_server, publisher):
    for version in ("1.0.0", "1.1.0", "2.0.0"):
        publisher.publish(_doc(version=version))
    publisher.status("com.acme/weather", "1.0.0", "deprecated", "Project archived")

    answer = publisher.status_all("com.acme/weather", "deprecated", "Project archived")

    assert answer.status_code == 200
    assert answer.json()["updatedCount"] == 2  # 1.0.0 already said exactly that
    assert {e["_meta"][OFFICIAL]["status"] for e in answer.json()["servers"]} == {"deprecated"}
    assert ServerVersion.objects.filter(status="deprecated").count() == 3


def test_a_published_version_never_changes(live_server, publisher):
    publisher.publish(_doc(version="1.0.0"))
    url = f"{live_server.url}/v0.1/servers/com.acme%2Fweather/versions/1.0.0"
    auth = {"Authorization": f"Bearer {publisher.token}"}

    again = publisher.publish(_doc(version="1.0.0", description="Something else"))
    put = requests.put(url, json=_doc(description="Changed"), headers=auth, timeout=10)
    delete = requests.delete(url, headers=auth, timeout=10)

    assert (again.status_code, put.status_code, delete.status_code) == (400, 501, 501)
    assert again.json()["error"]["message"] == (
        "Version 1.0.0 of com.acme/weather is already published; published versions never change."
    )
    assert delete.json()["error"]["code"] == "NOT_IMPLEMENTED"
    assert _read(live_server, publisher, "com.acme/weather", "1.0.0").json()["server"] == _doc()


def test_concurrent_first_publishes_of_one_name_leave_exactly_one_latest(publisher):
    versions = [f"1.{n}.0" for n in range(12)]

    with ThreadPoolExecutor(max_workers=12) as pool:
        answers = list(pool.map(lambda v: publisher.publish(_doc(version=v)).status_code, versions))

    assert answers == [200] * 12
    assert list(ServerVersion.objects.filter(is_latest=True).values_list("version", flat=True)) == ["1.11.0"]
