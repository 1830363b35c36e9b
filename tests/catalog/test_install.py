"""How to install or reach a catalog entry (catalog/install.py), on the real server.json documents of
../shared/data/server-json-samples.json (copied under tests/data): expected commands and host
configurations written out for a representative dozen, and rules every document must keep."""

import json
import shlex
import subprocess

import pytest

from catalog.install import ways_to_use
from tests.conftest import PROJECT_DIR

SAMPLES = json.loads((PROJECT_DIR / "tests" / "data" / "server-json-samples.json").read_text())["documents"]


def document(name: str, index: int = 0) -> dict:
    return [sample["document"] for sample in SAMPLES if sample["document"].get("name") == name][index]


def shown(name: str, index: int = 0) -> list[tuple[str, str, dict | None]]:
    """(label, command or URL, the `mcpServers` entry) of every way to use the document."""
    return [
        (
            way.label,
            way.command or way.url,
            next(iter(json.loads(way.config)["mcpServers"].values())) if way.config else None,
        )
        for way in ways_to_use(document(name, index))
    ]


EXPECTED = {
    # A required secret: in npx's environment, passed into the container with -e.
    "io.github.domdomegg/airtable-mcp-server": [
        (
            "npm",
            "npx -y airtable-mcp-server@1.7.2",
            {
                "command": "npx",
                "args": ["-y", "airtable-mcp-server@1.7.2"],
                "env": {"AIRTABLE_API_KEY": "<AIRTABLE_API_KEY>"},
            },
        ),
        (
            "oci",
            "docker run -i --rm -e AIRTABLE_API_KEY docker.io/domdomegg/airtable-mcp-server:1.7.2",
            {
                "command": "docker",
                "args": [
                    "run",
                    "-i",
                    "--rm",
                    "-e",
                    "AIRTABLE_API_KEY",
                    "docker.io/domdomegg/airtable-mcp-server:1.7.2",
                ],
                "env": {"AIRTABLE_API_KEY": "<AIRTABLE_API_KEY>"},
            },
        ),
        (
            "mcpb",
            "https://github.com/domdomegg/airtable-mcp-server/releases/download/v1.7.2/airtable-mcp-server.mcpb",
            None,
        ),
    ],
    "io.github.domdomegg/time-mcp-nuget": [
        (
            "nuget",
            "dnx TimeMcpServer@1.0.8 --yes",
            {"command": "dnx", "args": ["TimeMcpServer@1.0.8", "--yes"]},
        )
    ],
    # Package arguments after the package; eight optional variables, none in the configuration.
    "io.github.06ketan/medium-ops": [
        (
            "pypi",
            "uvx medium-ops==0.1.2 mcp serve",
            {"command": "uvx", "args": ["medium-ops==0.1.2", "mcp", "serve"]},
        )
    ],
    # A package that serves streamable HTTP once started: the host connects to its URL.
    "io.github.0xChron/polymarket-mcp": [
        ("pypi", "uvx 0xchron-polymarket-mcp==0.1.0", {"type": "http", "url": "http://localhost:8000/mcp"})
    ],
    # A remote whose URL has a variable and whose headers are required.
    "io.github.TencentCloudBase/cloudbase-mcp": [
        (
            "npm",
            "npx -y @cloudbase/cloudbase-mcp@2.30.1",
            {"command": "npx", "args": ["-y", "@cloudbase/cloudbase-mcp@2.30.1"]},
        ),
        (
            "streamable-http",
            "https://tcb-api.cloud.tencent.com/mcp/v1?env_id=<env_id>",
            {
                "type": "http",
                "url": "https://tcb-api.cloud.tencent.com/mcp/v1?env_id=<env_id>",
                "headers": {
                    "X-TencentCloud-SecretId": "<X-TencentCloud-SecretId>",
                    "X-TencentCloud-SecretKey": "<X-TencentCloud-SecretKey>",
                },
            },
        ),
    ],
    # The same package twice: over stdio, and serving streamable HTTP.
    "io.github.Antonytm/mcp-figma": [
        (
            "npm",
            "npx -y @antonytm/mcp-figma@0.1.0",
            {"command": "npx", "args": ["-y", "@antonytm/mcp-figma@0.1.0"]},
        ),
        ("npm", "npx -y @antonytm/mcp-figma@0.1.0", {"type": "http", "url": "http://localhost:3001/mcp"}),
    ],
    # Two URL variables with no value given: placeholders a person fills in.
    "io.github.checkmarx/security-mcp": [
        (
            "streamable-http",
            "https://<api_host>/api/security-mcp/mcp/<tenant_id>",
            {"type": "http", "url": "https://<api_host>/api/security-mcp/mcp/<tenant_id>"},
        )
    ],
    # Runtime arguments that spell the whole `docker run`, boolean switches and a variable in a value.
    "io.github.github/github-mcp-server": [
        (
            "oci",
            "docker run -i --rm -e 'GITHUB_PERSONAL_ACCESS_TOKEN=<token>' ghcr.io/github/github-mcp-server",
            {
                "command": "docker",
                "args": [
                    "run",
                    "-i",
                    "--rm",
                    "-e",
                    "GITHUB_PERSONAL_ACCESS_TOKEN=<token>",
                    "ghcr.io/github/github-mcp-server",
                ],
            },
        )
    ],
    # Runtime arguments after `docker run`, their defaults and a required secret.
    "io.github.hashicorp/terraform-mcp-server": [
        (
            "oci",
            "docker run -i --rm -e TFE_ADDRESS=https://app.terraform.io -e 'TFE_TOKEN=<token>' "
            "-e ENABLE_TF_OPERATIONS=false docker.io/hashicorp/terraform-mcp-server:1.1.0",
            {
                "command": "docker",
                "args": [
                    "run",
                    "-i",
                    "--rm",
                    "-e",
                    "TFE_ADDRESS=https://app.terraform.io",
                    "-e",
                    "TFE_TOKEN=<token>",
                    "-e",
                    "ENABLE_TF_OPERATIONS=false",
                    "docker.io/hashicorp/terraform-mcp-server:1.1.0",
                ],
            },
        )
    ],
    "io.github.lacs-project/sysknife": [("cargo", "cargo install sysknife-cli --version 0.11.0", None)],
    # Optional headers only (the server signs its users in with OAuth): none in the configuration.
    "ai.saltapp/salt": [
        (
            "streamable-http",
            "https://mcp.saltapp.ai/mcp",
            {"type": "http", "url": "https://mcp.saltapp.ai/mcp"},
        )
    ],
    # Twenty-four optional options and variables: none on the command line or in the configuration.
    "io.github.mongodb-js/mongodb-mcp-server": [
        (
            "npm",
            "npx -y mongodb-mcp-server@1.2.0",
            {"command": "npx", "args": ["-y", "mongodb-mcp-server@1.2.0"]},
        ),
        (
            "oci",
            "docker run -i --rm docker.io/mongodb/mongodb-mcp-server:1.2.0",
            {
                "command": "docker",
                "args": ["run", "-i", "--rm", "docker.io/mongodb/mongodb-mcp-server:1.2.0"],
            },
        ),
    ],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_representative_dozen_is_installed_as_written_out_by_hand(name):
    assert shown(name) == EXPECTED[name]


def test_a_cargo_package_says_how_to_run_what_it_installed():
    (way,) = ways_to_use(document("io.github.lacs-project/sysknife"))

    assert way.note == "Then run the installed program with: mcp-server"


def test_a_package_serving_http_says_to_start_it_then_connect():
    (way,) = ways_to_use(document("io.github.0xChron/polymarket-mcp"))

    assert (way.transport, way.url) == ("streamable-http", "http://localhost:8000/mcp")
    assert way.note.startswith("Start it with the command above (it serves streamable-http)")


@pytest.mark.parametrize("index", range(len(SAMPLES)))
def test_every_sample_gives_commands_that_parse_and_configurations_without_optional_placeholders(index):
    doc = SAMPLES[index]["document"]

    ways = ways_to_use(doc) if isinstance(doc, dict) else []

    packages = [p for p in doc.get("packages") or [] if isinstance(p, dict)] if isinstance(doc, dict) else []
    optional = {
        item["name"]
        for package in packages
        for item in package.get("environmentVariables") or []
        if isinstance(item, dict) and isinstance(item.get("name"), str) and not item.get("isRequired")
    }
    for way in ways:
        if not way.config:
            continue
        entry = next(iter(json.loads(way.config)["mcpServers"].values()))
        placeholders = {name for name, value in (entry.get("env") or {}).items() if value == f"<{name}>"}
        assert placeholders & optional == set()
        if "command" in entry:  # what the page shows is what the host runs
            assert shlex.split(way.command) == [entry["command"], *entry["args"]]


UVX_DOCUMENTS = [
    sample["document"]
    for sample in SAMPLES
    if any(way.command and way.command.split()[0] == "uvx" for way in ways_to_use(sample["document"]))
]


@pytest.mark.parametrize("server", UVX_DOCUMENTS, ids=lambda document: document["name"])
def test_every_uvx_command_line_is_read_by_uvx_itself_as_the_package_and_version_of_the_document(
    server, tmp_path
):
    """uv's own parser reads each generated line (offline: it parses, then resolves from an empty cache,
    and says which requirement it could not find): a word it does not take is a usage error (exit 2)."""
    uvx = PROJECT_DIR / ".venv" / "bin" / "uvx"
    assert uvx.exists(), "uvx is missing: `make test` installs uv from requirements-test.txt"
    [command] = [way.command for way in ways_to_use(server) if way.command and way.command.startswith("uvx ")]
    package = next(p for p in server["packages"] if p.get("registryType") == "pypi")
    environment = {
        "PATH": "/usr/bin:/bin",
        "UV_CACHE_DIR": str(tmp_path),
        "UV_NO_CONFIG": "1",
        "HOME": str(tmp_path),
    }

    ran = subprocess.run(
        [str(uvx), "--offline", *shlex.split(command)[1:]],
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,
    )

    assert ran.returncode == 1, ran.stderr
    assert f"you require {package['identifier']}=={package['version']}".lower() in ran.stderr.lower()
    assert "unexpected argument" not in ran.stderr
