"""The MCP skills extension (SEP-2640) on a virtual server, through the real gateway on loopback: raw
JSON-RPC for the extension's methods (the SDK's release carries none), checked against the SEP's result
shapes (tests/data/skills_extension/), and the official SDK client for `resources/read`. Digests are
recomputed here from the bytes read; a skill the caller may not see is unknown to every method; a changed
version is held and the approved one served until an administrator approves."""

import base64
import hashlib
import io
import json
import tarfile
from pathlib import Path

import jsonschema
import pytest
import yaml

from skills.models import SkillVersion
from skills.services import skill_version_approve
from tests.gateway.gateway_calls import INITIALIZE, bearer, gateway_fixture, post, run  # noqa: F401
from virtual_servers.services import virtual_server_create

pytestmark = pytest.mark.django_db(transaction=True)

SCHEMA = json.loads((Path(__file__).parent.parent / "data/skills_extension/results.schema.json").read_text())
EVERYTHING = [{"server": "*", "methods": ["*"], "tools": ["*"]}]
SKILL_MD = b"""---
name: pdf-tools
description: Extract text and tables from PDF files.
license: MIT
metadata:
  author: acme
---

# PDF tools

Pick a template from `templates/` and run `scripts/extract.py`.
"""
FILES = {
    "SKILL.md": SKILL_MD,
    "scripts/extract.py": b"import sys\nprint(open(sys.argv[1], 'rb').read()[:100])\n",
    "templates/invoice.md": b"# Invoice\n",
    "templates/regional/eu.md": b"# EU invoice\n",
    "assets/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe",
}
NOTES = {"SKILL.md": b"---\nname: notes\ndescription: Private notes.\n---\n\nNothing here.\n"}


def tar_gz(files: dict[str, bytes], folder: str) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path, data in files.items():
            info = tarfile.TarInfo(f"{folder}/{path}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    buffer.name = f"{folder}.tar.gz"
    return buffer


@pytest.fixture
def kit(client, member, scope_factory, token_for):
    """A virtual server /kit serving two skills: /pdf-tools (public) and /notes (bob's, private); vic's
    token, who may call everything."""
    client.force_login(member("ada", "nobody"))
    assert client.post("/api/skills", {"archive": tar_gz(FILES, "pdf-tools")}).status_code == 201
    client.force_login(member("bob", "nobody"))
    published = client.post("/api/skills", {"archive": tar_gz(NOTES, "notes"), "visibility": "private"})
    assert published.status_code == 201
    virtual_server_create(
        actor=None, path="/kit", definition={"name": "Kit", "skills": ["/pdf-tools", "/notes"]}
    )
    scope_factory("everything", group="everyone", server_rules=EVERYTHING)
    return token_for(member("vic", "everyone"))


def session(port: int, token: str) -> tuple[str, dict]:
    status, headers, body = post(port, "/kit/mcp", INITIALIZE, bearer(token))
    assert status == 200
    return headers["mcp-session-id"], json.loads(body)["result"]


def call(port: int, token: str, session_id: str, method: str, params: dict | None = None) -> dict:
    message = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params or {}}
    status, _, body = post(port, "/kit/mcp", message, bearer(token, **{"Mcp-Session-Id": session_id}))
    assert status == 200
    return json.loads(body)


def test_the_extension_is_declared_and_lists_each_skill_whole_with_digests_of_the_bytes_served(gateway, kit):
    session_id, opened = session(gateway.port, kit)
    listed = call(gateway.port, kit, session_id, "skills/list")["result"]

    async def work(client):
        return {
            item["uri"]: await client.read_resource(item["uri"]) for item in listed["skills"][0]["resources"]
        }

    read = run(gateway.url("/kit/mcp"), kit, work)

    jsonschema.validate(listed, SCHEMA)
    assert opened["capabilities"]["extensions"] == {
        "io.modelcontextprotocol/skills": {"directoryRead": True},
        "io.modelcontextprotocol/tasks": {},
    }
    assert "resources" in opened["capabilities"]
    assert [skill["uri"] for skill in listed["skills"]] == ["skill://pdf-tools/SKILL.md"]  # not bob's notes
    entry = listed["skills"][0]
    assert entry["frontmatter"] == yaml.safe_load(SKILL_MD.split(b"---")[1])
    served = {}
    for uri, result in read.items():
        content = result.contents[0]
        data = content.text.encode() if hasattr(content, "text") else base64.b64decode(content.blob)
        served[uri] = f"sha256:{hashlib.sha256(data).hexdigest()}"
    assert {item["uri"]: item["digest"] for item in entry["resources"]} == served
    assert sorted(served) == sorted(f"skill://pdf-tools/{path}" for path in FILES)
    logo = FILES["assets/logo.png"]
    assert served["skill://pdf-tools/assets/logo.png"] == f"sha256:{hashlib.sha256(logo).hexdigest()}"


def test_skills_get_answers_a_served_skill_and_minus_32602_for_any_other_uri(gateway, kit):
    session_id, _ = session(gateway.port, kit)
    listed = call(gateway.port, kit, session_id, "skills/list")["result"]["skills"]
    answers = {
        uri: call(gateway.port, kit, session_id, "skills/get", {"uri": uri})
        for uri in (
            "skill://pdf-tools/SKILL.md",
            "skill://notes/SKILL.md",  # bob's private skill
            "skill://nothing/SKILL.md",
            "skill://pdf-tools/templates/invoice.md",
        )
    }

    jsonschema.validate(answers["skill://pdf-tools/SKILL.md"]["result"], SCHEMA)
    assert answers["skill://pdf-tools/SKILL.md"]["result"]["skill"] == listed[0]
    for uri in (
        "skill://notes/SKILL.md",
        "skill://nothing/SKILL.md",
        "skill://pdf-tools/templates/invoice.md",
    ):
        assert answers[uri]["error"]["code"] == -32602
    assert call(gateway.port, kit, session_id, "resources/read", {"uri": "skill://notes/SKILL.md"})[
        "error"
    ] == {
        "code": -32602,
        "message": "No resource this server serves you is at skill://notes/SKILL.md.",
    }


def test_a_skills_folders_are_read_as_directory_resources(gateway, kit):
    session_id, _ = session(gateway.port, kit)

    def children(uri: str) -> dict:
        return call(gateway.port, kit, session_id, "resources/directory/read", {"uri": uri})

    root, templates = children("skill://pdf-tools"), children("skill://pdf-tools/templates")

    jsonschema.validate(root["result"], SCHEMA)
    assert [(item["name"], item["mimeType"]) for item in root["result"]["resources"]] == [
        ("SKILL.md", "text/markdown"),
        ("assets", "inode/directory"),
        ("scripts", "inode/directory"),
        ("templates", "inode/directory"),
    ]
    assert [item["uri"] for item in templates["result"]["resources"]] == [
        "skill://pdf-tools/templates/invoice.md",
        "skill://pdf-tools/templates/regional",
    ]
    for uri in ("skill://pdf-tools/SKILL.md", "skill://pdf-tools/nothing", "skill://notes"):
        assert children(uri)["error"]["code"] == -32602


def test_skills_list_is_paged_and_each_entry_whole(gateway, kit, member, token_for, monkeypatch):
    from gateway.virtual import skills

    monkeypatch.setattr(skills, "PAGE_SIZE", 1)
    admin = token_for(member("root", is_superuser=True, is_staff=True))
    session_id, _ = session(gateway.port, admin)
    first = call(gateway.port, admin, session_id, "skills/list")["result"]
    second = call(gateway.port, admin, session_id, "skills/list", {"cursor": first["nextCursor"]})["result"]
    refused = call(gateway.port, admin, session_id, "skills/list", {"cursor": "not a cursor"})

    assert [skill["uri"] for skill in first["skills"]] == ["skill://notes/SKILL.md"]
    assert [skill["uri"] for skill in second["skills"]] == ["skill://pdf-tools/SKILL.md"]
    assert len(second["skills"][0]["resources"]) == len(FILES)  # an entry is never split across pages
    assert "nextCursor" not in second
    assert refused["error"]["code"] == -32602


def test_a_2026_07_28_client_gets_the_list_caching_attributes(gateway, kit):
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    status, _, body = post(
        gateway.port,
        "/kit/mcp",
        {"jsonrpc": "2.0", "id": 1, "method": "skills/list", "params": {"_meta": meta}},
        bearer(kit, **{"MCP-Protocol-Version": "2026-07-28"}),
    )

    result = json.loads(body)["result"]
    assert status == 200
    assert (result["ttlMs"], result["cacheScope"], len(result["skills"])) == (60_000, "private", 1)


def test_a_changed_version_is_held_and_the_approved_one_served_until_approved(gateway, kit, client, member):
    client.force_login(member("ada", "nobody"))
    changed = {**FILES, "templates/invoice.md": b"# Invoice\n\nTotal due.\n"}
    assert client.post("/api/skills", {"archive": tar_gz(changed, "pdf-tools")}).status_code == 201
    session_id, _ = session(gateway.port, kit)
    uri = "skill://pdf-tools/templates/invoice.md"

    before = call(gateway.port, kit, session_id, "resources/read", {"uri": uri})["result"]["contents"][0]
    pending = SkillVersion.objects.get(status="pending")
    skill_version_approve(actor=None, version=pending)
    after = call(gateway.port, kit, session_id, "resources/read", {"uri": uri})["result"]["contents"][0]
    digests = {
        item["uri"]: item["digest"]
        for item in call(gateway.port, kit, session_id, "skills/list")["result"]["skills"][0]["resources"]
    }

    assert before["text"] == "# Invoice\n"
    assert after["text"] == "# Invoice\n\nTotal due.\n"
    assert digests[uri] == f"sha256:{hashlib.sha256(changed['templates/invoice.md']).hexdigest()}"


def test_the_one_rule_at_the_virtual_path_refuses_the_extensions_methods_it_does_not_grant(
    gateway, kit, member, scope_factory, token_for
):
    scope_factory("reader", group="readers", server_rules=[{"server": "/kit", "methods": ["initialize"]}])
    token = token_for(member("rita", "readers"))
    session_id, _ = session(gateway.port, token)

    refused = call(gateway.port, token, session_id, "skills/list")

    assert refused["error"]["message"] == "Access denied: 'rita' may not call 'skills/list' on server '/kit'."
