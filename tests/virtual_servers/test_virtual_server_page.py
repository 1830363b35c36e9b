"""A virtual server's own page: its members (linked to their pages), the tools clients see under it with
the member and own name behind each and whether the viewer may call it, its MCP URL, an edit link for
those who may change it; a 404 for whoever does not see it. Search and the dashboard link to it."""

import re

import pytest

from tests.factories import ServerFactory, ToolFactory
from tests.servers.test_dashboard import html
from virtual_servers.services import virtual_server_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def team(db):
    clock = ServerFactory(path="/clock", name="Clock")
    notes = ServerFactory(path="/notes", name="Notes")
    for server, name in ((clock, "add"), (clock, "echo"), (notes, "search")):
        ToolFactory(server=server, name=name)
    definition = {
        "name": "Team",
        "description": "What the team uses",
        "members": [
            {"server": "/clock", "tools": {"include": ["add"]}},
            {"server": "/notes", "tool_settings": {"search": {"alias": "find_notes"}}},
        ],
    }
    return virtual_server_create(actor=None, path="/team", definition=definition)


def test_the_page_shows_members_and_the_tools_clients_see(admin_client, team):
    page = html(admin_client.get("/virtual-servers/team"))
    dashboard = html(admin_client.get("/"))

    tools = re.findall(
        r'<tr data-virtual-tool="(\w+)"><td data-label="Tool"><code>\w+</code></td>'
        r'<td data-label="From"><a href="([^"]+)">',
        page,
    )
    assert tools == [("add", "/servers/clock#tool-add"), ("find_notes", "/servers/notes#tool-search")]
    assert re.findall(r'<tr data-member="([^"]+)">', page) == ["/clock", "/notes"]
    assert "http://testserver/team/mcp" in page
    assert f'href="/admin/virtual_servers/virtualserver/{team.pk}/change/" data-edit' in page
    assert '<a href="/virtual-servers/team">Team</a>' in dashboard


def test_whoever_does_not_see_it_gets_a_404_and_a_reader_no_edit_link(client, team, member, scope_factory):
    scope_factory(
        "team-only", group="team", server_rules=[{"server": "/team", "methods": ["*"], "tools": ["add"]}]
    )
    client.force_login(member("tess", "team"))
    seen = client.get("/virtual-servers/team")
    hidden = client.get("/virtual-servers/nothing")

    assert seen.status_code == 200 and "data-edit" not in html(seen)
    assert re.findall(r'data-virtual-tool="(\w+)">.*?data-label="You may call it">(\w+)<', html(seen)) == [
        ("add", "no"),  # a virtual server grants no more than its members do: tess has no right on /clock
        ("find_notes", "no"),
    ]
    assert hidden.status_code == 404


def test_the_page_lists_the_skills_it_serves_that_the_viewer_may_see(client, team, member, scope_factory):
    from skills.archives import read_folder
    from skills.services import Origin, skill_version_publish

    def skill(name: str, visibility: str) -> None:
        front = f"---\nname: {name}\ndescription: The {name} skill.\n---\n\nSteps.\n".encode()
        files = {"SKILL.md": front, "references/more.md": b"# More\n"}
        origin = Origin(path="", source="upload")
        skill_version_publish(actor=None, read=read_folder(files, name), visibility=visibility, origin=origin)

    skill("pdf-tools", "public")
    skill("secret-notes", "private")
    virtual_server_create(
        actor=None,
        path="/kit",
        definition={"name": "Kit", "skills": ["/pdf-tools", "/secret-notes"]},
    )
    scope_factory("kit", group="kit", server_rules=[{"server": "/kit", "methods": ["*"]}])
    client.force_login(member("kim", "kit"))

    page = html(client.get("/virtual-servers/kit"))

    assert re.findall(
        r'<tr data-virtual-skill="([^"]+)">.*?<code>([^<]+)</code>.*?data-label="Files">(\d+)<', page
    ) == [("/pdf-tools", "skill://pdf-tools/SKILL.md", "2")]


def test_each_tool_clients_see_shows_its_calls_at_its_member_of_the_last_day(admin_client, team):
    from tests.factories import ToolCallFactory

    for ms, ok in ((10, True), (20, True), (30, False)):
        # its own name at /notes; clients see it as find_notes
        ToolCallFactory(duration_ms=ms, success=ok, tool_name="search", dimensions={"server": "/notes"})

    page = html(admin_client.get("/virtual-servers/team"))

    usage = dict(re.findall(r'<tr data-virtual-tool="(\w+)">.*?data-tool-usage>([^<]*)<', page))
    assert usage == {"add": "no calls", "find_notes": "3 calls, 1 failed; p50 20.0 ms, p95 29.0 ms"}
