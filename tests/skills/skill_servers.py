"""A real MCP server (the official SDK's `MCPServer` on loopback) that serves skills by the skills
extension (SEP-2640): `skills/list` and `skills/get` over a catalog the test may change while it runs
(`{skill path: {file path: bytes}}`), each file a `skill://` resource read through `resources/read`."""

from __future__ import annotations

import hashlib

import mcp_types
import pytest
from mcp.server import MCPServer

from tests.mcp_servers import UvicornThread, loopback_socket

EXTENSION = "io.modelcontextprotocol/skills"


class SkillsCatalog:
    def __init__(self, skills: dict[str, dict[str, bytes]]):
        self.skills = skills
        self.digest_lies: set[str] = set()  # URIs whose listed digest is not their bytes'

    def entry(self, skill_path: str) -> dict:
        import yaml

        files = self.skills[skill_path]
        front = yaml.safe_load(files["SKILL.md"].split(b"---")[1])
        resources = []
        for path, data in sorted(files.items()):
            uri = f"skill://{skill_path}/{path}"
            digest = hashlib.sha256(data + (b"!" if uri in self.digest_lies else b"")).hexdigest()
            resources.append({"uri": uri, "digest": f"sha256:{digest}"})
        return {"uri": f"skill://{skill_path}/SKILL.md", "frontmatter": front, "resources": resources}


def skills_app(catalog: SkillsCatalog, name: str = "Skills"):
    server = MCPServer(name, log_level="WARNING")

    @server.tool()
    def ping() -> str:
        """Answer pong."""
        return "pong"

    for skill_path, files in catalog.skills.items():
        for path in files:
            server.resource(f"skill://{skill_path}/{path}")(_reader(catalog, skill_path, path))

    async def skills_list(ctx, params):
        return {"skills": [catalog.entry(skill_path) for skill_path in catalog.skills]}

    async def skills_get(ctx, params):
        for skill_path in catalog.skills:
            if params.uri == f"skill://{skill_path}/SKILL.md":
                return {"skill": catalog.entry(skill_path)}
        raise ValueError("unknown skill")

    lowlevel = server._lowlevel_server
    lowlevel.add_request_handler("skills/list", mcp_types.PaginatedRequestParams, skills_list)
    lowlevel.add_request_handler("skills/get", mcp_types.ReadResourceRequestParams, skills_get)
    lowlevel.extensions[EXTENSION] = {}
    return server.streamable_http_app()


def _reader(catalog: SkillsCatalog, skill_path: str, path: str):
    def read() -> bytes | str:
        data = catalog.skills[skill_path][path]
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return data

    return read


@pytest.fixture(name="serve_skills")
def serve_skills_fixture():
    """Start a skills server over a catalog: `serve_skills(catalog)` → its MCP URL."""
    running = []

    def start(catalog: SkillsCatalog, name: str = "Skills") -> str:
        server = UvicornThread(skills_app(catalog, name), loopback_socket()).start()
        running.append(server)
        return server.url("/mcp")

    yield start
    for server in running:
        server.stop()
