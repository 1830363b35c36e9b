"""The catalog page: published and mirrored servers with how to install them or where to reach them."""

import json

import pytest

from catalog.install import ways_to_use
from catalog.models import Upstream
from tests.factories import stored_version

pytestmark = pytest.mark.django_db

NPM = {
    "registryType": "npm",
    "identifier": "@acme/weather-mcp",
    "version": "1.2.0",
    "transport": {"type": "stdio"},
    "environmentVariables": [
        {"name": "WEATHER_KEY", "description": "API key", "isRequired": True, "isSecret": True}
    ],
}


def test_each_registry_type_is_installed_with_its_own_command():
    document = {
        "name": "io.github.acme/weather",
        "packages": [
            NPM,
            {"registryType": "pypi", "identifier": "acme-weather", "version": "1.2.0"},
            {"registryType": "oci", "identifier": "ghcr.io/acme/weather", "version": "1.2.0"},
            {"registryType": "nuget", "identifier": "Acme.Weather", "version": "1.2.0"},
            {"registryType": "cargo", "identifier": "acme-weather", "version": "1.2.0"},
            {"registryType": "mcpb", "identifier": "https://x.test/w.mcpb", "fileSha256": "ab" * 32},
        ],
        "remotes": [{"type": "streamable-http", "url": "https://mcp.acme.test/mcp"}],
    }

    ways = ways_to_use(document)

    assert [(w.label, w.command or w.url) for w in ways] == [
        ("npm", "npx -y @acme/weather-mcp@1.2.0"),
        ("pypi", "uvx acme-weather==1.2.0"),
        ("oci", "docker run -i --rm ghcr.io/acme/weather:1.2.0"),
        ("nuget", "dnx Acme.Weather@1.2.0 --yes"),
        ("cargo", "cargo install acme-weather --version 1.2.0"),
        ("mcpb", "https://x.test/w.mcpb"),
        ("streamable-http", "https://mcp.acme.test/mcp"),
    ]
    assert json.loads(ways[0].config) == {
        "mcpServers": {
            "weather": {
                "command": "npx",
                "args": ["-y", "@acme/weather-mcp@1.2.0"],
                "env": {"WEATHER_KEY": "<WEATHER_KEY>"},
            }
        }
    }
    assert json.loads(ways[-1].config) == {
        "mcpServers": {"weather": {"type": "http", "url": "https://mcp.acme.test/mcp"}}
    }


def test_the_page_lists_latest_versions_with_how_to_install_them(client, member):
    client.force_login(member("reader"))
    official = Upstream.objects.create(name="official", url="https://registry.example.test")
    stored_version("io.github.acme/weather", "1.2.0", title="Weather", packages=[NPM])
    stored_version("io.github.acme/weather", "1.0.0", latest=False)
    stored_version("com.example/old", status="deprecated")
    stored_version("com.example/gone", status="deleted")
    stored_version("com.example/mirrored", upstream=official)

    page = client.get("/catalog").content.decode()
    searched = client.get("/catalog", {"q": "weather"}).content.decode()

    assert page.count('class="card catalog-entry"') == 3
    assert "npx -y @acme/weather-mcp@1.2.0" in page and "WEATHER_KEY" in page
    assert "mirrored from official" in page and "Deprecated" in page and "com.example/gone" not in page
    assert searched.count('class="card catalog-entry"') == 1


def test_the_page_needs_a_login(client):
    answer = client.get("/catalog")

    assert (answer.status_code, answer["Location"].startswith("/login")) == (302, True)
