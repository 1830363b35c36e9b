"""Skills published from a real Git repository made here (`git init`, commits and tags) and served by
`git daemon` on loopback: the skill's folder read at a ref, its commit kept, a one-byte change at a new
ref held until approved, and the outbound rules: an address that is not public refused unless allowed, no
`file://`, no ref that reads as an option, no link out of the tree."""

import hashlib
import io
import socket
import subprocess

import pytest

from skills.choices import Source
from skills.models import Skill

pytestmark = pytest.mark.django_db

SKILL_MD = b"---\nname: pdf-tools\ndescription: Read PDF files.\n---\n\nRun scripts/extract.py.\n"
EXTRACT = b"print('text')\n"


def git(folder, *arguments) -> str:
    environment = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(folder), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *arguments],
        cwd=folder,
        env=environment,
        capture_output=True,
        check=True,
    )
    return done.stdout.decode().strip()


@pytest.fixture
def repository(tmp_path):
    """A repository `acme-skills` with skills/pdf-tools (tag v1), served by git daemon: (URL, folder)."""
    folder = tmp_path / "acme-skills"
    (folder / "skills/pdf-tools/scripts").mkdir(parents=True)
    (folder / "skills/pdf-tools/SKILL.md").write_bytes(SKILL_MD)
    (folder / "skills/pdf-tools/scripts/extract.py").write_bytes(EXTRACT)
    (folder / "README.md").write_text("Not part of the skill.\n")
    git(folder, "init", "--quiet", "--initial-branch=main")
    git(folder, "add", ".")
    git(folder, "commit", "--quiet", "-m", "pdf-tools")
    git(folder, "tag", "v1")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    daemon = subprocess.Popen(
        [
            "git",
            "daemon",
            "--reuseaddr",
            "--export-all",
            f"--base-path={tmp_path}",
            "--listen=127.0.0.1",
            f"--port={port}",
            str(tmp_path),
        ],  # fmt: skip
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            subprocess.run(["sleep", "0.05"], check=True)
    yield f"git://127.0.0.1:{port}/acme-skills", folder
    daemon.terminate()
    daemon.wait(timeout=10)


@pytest.fixture
def author(client, member, settings):
    settings.SKILL_SOURCE_ALLOW_LOOPBACK = True  # the daemon is on loopback, as in development
    client.force_login(member("ada", "nobody"))
    return client


def from_git(client, url: str, ref: str, folder: str = "skills/pdf-tools"):
    return client.post(
        "/api/skills", {"git_url": url, "ref": ref, "folder": folder}, content_type="application/json"
    )


def test_a_skill_is_published_from_a_folder_of_a_repository_at_a_tag(author, repository):
    url, folder = repository

    published = from_git(author, url, "v1")

    assert published.status_code == 201
    skill = Skill.objects.get(path="/pdf-tools")
    assert (skill.source, skill.source_url) == (Source.GIT, f"{url}#skills/pdf-tools")
    assert skill.approved.source_ref == git(folder, "rev-parse", "v1")
    assert {item["path"]: item["sha256"] for item in skill.approved.files} == {
        "SKILL.md": hashlib.sha256(SKILL_MD).hexdigest(),
        "scripts/extract.py": hashlib.sha256(EXTRACT).hexdigest(),
    }


def test_a_new_ref_with_one_byte_changed_is_held_and_the_old_file_served(author, repository):
    url, folder = repository
    from_git(author, url, "v1")
    (folder / "skills/pdf-tools/scripts/extract.py").write_bytes(b"print('text!')\n")
    git(folder, "commit", "--quiet", "-am", "louder")

    again = from_git(author, url, "main")
    served = author.get("/api/skills/pdf-tools/files/scripts/extract.py")

    assert (again.status_code, again.json()["published"]["status"]) == (201, "pending")
    assert served.content == EXTRACT


@pytest.mark.parametrize(
    ("loopback", "url", "ref", "folder", "said"),
    [
        (False, None, "v1", "skills/pdf-tools", "git_url: 127.0.0.1 resolves to an address that is not"),
        (True, "file:///etc", "v1", "skills/pdf-tools", "git_url: A repository is an https://"),
        (True, "http://user:secret@127.0.0.1/x", "v1", "", "git_url: A repository is an https://"),
        (True, None, "--upload-pack=touch /tmp/x", "skills/pdf-tools", "git_ref: A ref is a branch"),
        (True, None, "v1", "../etc", "git_folder: The skill's folder is a path inside the repository"),
        (True, None, "no-such-ref", "skills/pdf-tools", "git_fetch: "),
        (True, None, "v1", "", "name_matches_folder: "),
    ],
)
def test_what_the_outbound_rules_or_the_skill_rules_refuse_is_a_400_naming_the_rule(
    client, member, settings, repository, loopback, url, ref, folder, said
):
    settings.SKILL_SOURCE_ALLOW_LOOPBACK = loopback
    client.force_login(member("ada", "nobody"))
    if folder == "" and url is None:
        (repository[1] / "SKILL.md").write_bytes(SKILL_MD)  # at the root of a repository named acme-skills
        git(repository[1], "add", ".")
        git(repository[1], "commit", "--quiet", "-m", "root skill")
        git(repository[1], "tag", "-f", "v1")

    refused = from_git(client, url or repository[0], ref, folder)

    assert refused.status_code == 400
    assert refused.json()["detail"].startswith(said)
    assert not Skill.objects.exists()


def test_a_link_in_the_skills_folder_is_refused_before_anything_is_read(author, repository):
    url, folder = repository
    (folder / "skills/pdf-tools/secrets").symlink_to("/etc/passwd")
    git(folder, "add", ".")
    git(folder, "commit", "--quiet", "-m", "link")

    refused = from_git(author, url, "main")

    assert refused.status_code == 400
    assert refused.json()["detail"] == (
        "no_links: skills/pdf-tools/secrets: links and submodules are not part of a skill."
    )


def test_an_archive_and_a_repository_at_once_are_refused(author, repository):
    upload = io.BytesIO(b"\x1f\x8b")
    upload.name = "x.tar.gz"

    refused = author.post("/api/skills", {"archive": upload, "git_url": repository[0], "ref": "v1"})

    assert refused.status_code == 400
    assert refused.json()["detail"].startswith("Send the skill's folder as `archive`")


def test_a_body_that_is_no_object_is_a_400_not_a_failure(author):
    refused = author.post("/api/skills", [None, None], content_type="application/json")

    assert (refused.status_code, refused.json()["detail"]) == (
        400,
        "Send a form with `archive`, or a JSON object.",
    )
