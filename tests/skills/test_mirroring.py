"""Skills mirrored from real MCP servers that serve them by the skills extension (tests/skills/
skill_servers.py), through the health check that lists them: every file read and checked against its
listed digest, stored at `<server path>/<skill path>` so equal names of two servers never shadow each
other, a one-byte change upstream held until an operator approves it (the old bytes served meanwhile), a
listing that lies about a digest never mirrored."""

import hashlib
import json

import pytest

from servers.health import check_and_record
from skills.choices import Source, VersionStatus
from skills.models import Skill, SkillVersion
from skills.services import skill_version_approve
from tests.factories import ServerFactory
from tests.gateway.gateway_calls import INITIALIZE, bearer, gateway_fixture, post  # noqa: F401
from tests.skills.skill_servers import SkillsCatalog, serve_skills_fixture  # noqa: F401
from virtual_servers.services import virtual_server_create

pytestmark = pytest.mark.django_db(transaction=True)

PDF = {
    "SKILL.md": b"---\nname: pdf-tools\ndescription: Read PDF files.\n---\n\nRun scripts/extract.py.\n",
    "scripts/extract.py": b"print('text')\n",
}
REFUNDS = {"SKILL.md": b"---\nname: refunds\ndescription: Refund by policy.\n---\n\nAsk for the receipt.\n"}
OTHER_PDF = {"SKILL.md": b"---\nname: pdf-tools\ndescription: Another PDF skill.\n---\n\nOther rules.\n"}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def docs(serve_skills):
    catalog = SkillsCatalog({"pdf-tools": dict(PDF), "acme/billing/refunds": dict(REFUNDS)})
    server = ServerFactory(path="/docs", name="Docs", proxy_pass_url=serve_skills(catalog, "Docs"))
    return catalog, server


def test_a_servers_skills_are_mirrored_by_its_check_with_the_digests_of_its_bytes(docs):
    catalog, server = docs

    result = check_and_record(server.pk)

    assert result.status == "healthy"
    skills = {skill.path: skill for skill in Skill.objects.all()}
    assert sorted(skills) == ["/docs/acme/billing/refunds", "/docs/pdf-tools"]
    pdf = skills["/docs/pdf-tools"]
    assert (pdf.source, pdf.visibility, pdf.owner_id, pdf.mirrored_from_id) == (
        Source.MIRROR,
        "internal",
        None,
        server.pk,
    )
    assert pdf.approved.source_ref == "skill://pdf-tools/SKILL.md"
    assert {item["path"]: item["sha256"] for item in pdf.approved.files} == {
        path: sha(data) for path, data in PDF.items()
    }
    assert check_and_record(server.pk) is not None
    assert SkillVersion.objects.count() == 2  # the same digests again: no new version


def test_equal_names_from_two_servers_never_shadow_each_other_on_a_virtual_server(
    docs, serve_skills, gateway, admin_user, token_for
):
    _, server = docs
    other = ServerFactory(
        path="/other", proxy_pass_url=serve_skills(SkillsCatalog({"pdf-tools": dict(OTHER_PDF)}), "Other")
    )
    check_and_record(server.pk)
    check_and_record(other.pk)
    virtual_server_create(
        actor=None, path="/kit", definition={"name": "Kit", "skills": ["/docs/pdf-tools", "/other/pdf-tools"]}
    )
    token = token_for(admin_user)
    status, headers, _ = post(gateway.port, "/kit/mcp", INITIALIZE, bearer(token))
    session = {"Mcp-Session-Id": headers["mcp-session-id"]}

    _, _, body = post(
        gateway.port,
        "/kit/mcp",
        {"jsonrpc": "2.0", "id": 2, "method": "skills/list"},
        bearer(token, **session),
    )

    listed = json.loads(body)["result"]["skills"]
    assert [(skill["uri"], skill["frontmatter"]["description"]) for skill in listed] == [
        ("skill://docs/pdf-tools/SKILL.md", "Read PDF files."),
        ("skill://other/pdf-tools/SKILL.md", "Another PDF skill."),
    ]


def test_a_one_byte_change_upstream_is_held_and_the_old_bytes_served_until_approved(docs, admin_client):
    catalog, server = docs
    check_and_record(server.pk)
    catalog.skills["pdf-tools"]["scripts/extract.py"] = b"print('text!')\n"

    check_and_record(server.pk)
    held = admin_client.get("/api/skills/docs/pdf-tools/files/scripts/extract.py")
    pending = SkillVersion.objects.get(skill__path="/docs/pdf-tools", status=VersionStatus.PENDING)
    skill_version_approve(actor=None, version=pending)
    approved = admin_client.get("/api/skills/docs/pdf-tools/files/scripts/extract.py")

    assert held.content == b"print('text')\n"
    assert approved.content == b"print('text!')\n"
    assert approved["ETag"] == f'"{sha(approved.content)}"'


def test_a_listing_that_lies_about_a_digest_is_never_mirrored(docs):
    catalog, server = docs
    catalog.digest_lies.add("skill://pdf-tools/scripts/extract.py")

    check_and_record(server.pk)

    assert sorted(Skill.objects.values_list("path", flat=True)) == ["/docs/acme/billing/refunds"]
