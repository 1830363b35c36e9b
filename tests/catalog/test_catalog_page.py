"""The catalog page: published and mirrored servers with how to install them or where to reach them."""

import json

import pytest
from django.utils import timezone

from catalog.install import ways_to_use
from catalog.models import ServerVersion, Upstream

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


def _version(name, version="1.0.0", *, latest=True, status="active", upstream=None, **document):
    now = timezone.now()
    return ServerVersion.objects.create(
        name=name,
        version=version,
        document={"name": name, "description": f"{name} does things", "version": version} | document,
        description=f"{name} does things",
        status=status,
        status_changed_at=now,
        published_at=now,
        updated_at=now,
        is_latest=latest,
        upstream=upstream,
    )


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
    _version("io.github.acme/weather", "1.2.0", title="Weather", packages=[NPM])
    _version("io.github.acme/weather", "1.0.0", latest=False)
    _version("com.example/old", status="deprecated")
    _version("com.example/gone", status="deleted")
    _version("com.example/mirrored", upstream=official)

    page = client.get("/catalog").content.decode()
    searched = client.get("/catalog", {"q": "weather"}).content.decode()

    assert page.count('class="card catalog-entry"') == 3
    assert "npx -y @acme/weather-mcp@1.2.0" in page and "WEATHER_KEY" in page
    assert "mirrored from official" in page and "Deprecated" in page and "com.example/gone" not in page
    assert searched.count('class="card catalog-entry"') == 1


def test_the_page_needs_a_login(client):
    answer = client.get("/catalog")

    assert (answer.status_code, answer["Location"].startswith("/login")) == (302, True)
