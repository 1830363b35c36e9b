"""The skills' well-known discovery (agentskills discovery v0.2.0 and the older v0.1.0 index): entries for
the skills the caller may see, each `digest` recomputed here from the bytes served (the archive unpacked
and compared file by file), GET and HEAD, 404 for a missing skill, anonymous callers under PUBLIC_LISTING
only (public skills), and a stored file changed behind the registry's back never served."""

import hashlib
import io
import tarfile

import pytest

from skills.models import SkillFile
from tests.skills.test_publishing import FILES, SKILL_MD, publish, tar_gz

pytestmark = pytest.mark.django_db

ALONE = SKILL_MD.replace(b"pdf-tools", b"note-taking").replace(b"PDF", b"notes")


@pytest.fixture
def published(client, member):
    client.force_login(member("ada", "nobody"))
    publish(client, tar_gz(FILES))
    publish(client, tar_gz({"SKILL.md": ALONE}, folder="note-taking"), visibility="private")
    return client


def test_the_index_lists_each_skill_with_the_digest_of_exactly_what_is_served(published):
    index = published.get("/.well-known/agent-skills/index.json")
    body = index.json()
    entries = {entry["name"]: entry for entry in body["skills"]}
    archive = published.get(entries["pdf-tools"]["url"])
    alone = published.get(entries["note-taking"]["url"])
    head = published.head(entries["pdf-tools"]["url"])

    assert body["$schema"] == "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
    assert (entries["pdf-tools"]["type"], entries["note-taking"]["type"]) == ("archive", "skill-md")
    assert entries["pdf-tools"]["url"] == "/.well-known/agent-skills/pdf-tools.tar.gz"
    assert archive["Content-Type"] == "application/gzip"
    assert entries["pdf-tools"]["digest"] == "sha256:" + hashlib.sha256(archive.content).hexdigest()
    with tarfile.open(fileobj=io.BytesIO(archive.content), mode="r:gz") as unpacked:
        assert {m.name: unpacked.extractfile(m).read() for m in unpacked} == FILES
    assert alone.content == ALONE
    assert entries["note-taking"]["digest"] == "sha256:" + hashlib.sha256(ALONE).hexdigest()
    assert (head.status_code, head.content, head["Content-Length"]) == (200, b"", str(len(archive.content)))
    assert index["Cache-Control"] == "private, max-age=300"
    assert index["Access-Control-Allow-Origin"] == "*"
    assert published.get("/.well-known/agent-skills/nothing.tar.gz").status_code == 404


def test_the_older_index_lists_the_same_skills_and_their_files(published):
    old = published.get("/.well-known/skills/index.json").json()
    read = published.get("/.well-known/skills/pdf-tools/references/forms.md")

    assert {entry["name"]: entry["files"] for entry in old["skills"]} == {
        "note-taking": ["SKILL.md"],
        "pdf-tools": sorted(FILES),
    }
    assert read.content == FILES["references/forms.md"]


def test_anonymous_callers_see_public_skills_only_under_public_listing(published, client, settings):
    published.logout()
    refused = client.get("/.well-known/agent-skills/index.json")
    settings.PUBLIC_LISTING = True
    listed = client.get("/.well-known/agent-skills/index.json")
    private = client.get("/.well-known/agent-skills/note-taking/SKILL.md")

    assert refused.status_code == 401
    assert [entry["name"] for entry in listed.json()["skills"]] == ["pdf-tools"]
    assert listed["Cache-Control"] == "public, max-age=300"
    assert private.status_code == 404


def test_a_file_changed_behind_the_registrys_back_is_never_served(published):
    SkillFile.objects.filter(path="references/forms.md").update(content=b"tampered")

    answer = published.get("/.well-known/skills/pdf-tools/references/forms.md")
    archive = published.get("/.well-known/agent-skills/pdf-tools.tar.gz")
    api = published.get("/api/skills/pdf-tools/files/references/forms.md")

    assert (answer.status_code, archive.status_code, api.status_code) == (409, 409, 409)
    assert b"tampered" not in answer.content + archive.content + api.content
