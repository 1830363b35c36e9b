"""A client that knows only openapi.yaml lists, pages and fetches servers over real HTTP."""

from urllib.parse import quote

import pytest
import requests
import yaml

from tests.factories import ServerFactory
from tests.servers.spec import SPEC_DIR, validate_openapi, validate_server_json


class SpecClient:
    """Builds every request from the spec's own paths and parameters; nothing registry-specific."""

    def __init__(self, base_url: str, token: str):
        self.spec = yaml.safe_load((SPEC_DIR / "openapi.yaml").read_text())
        self.base_url = base_url
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"

    def _call(self, template: str, path_params: dict, query: dict, schema: str) -> dict:
        operation = self.spec["paths"][template]["get"]
        allowed = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
        assert set(query) <= allowed
        url = template
        for name, value in path_params.items():
            url = url.replace("{" + name + "}", quote(value, safe=""))
        response = self.session.get(self.base_url + url, params=query, timeout=10)
        assert response.status_code == 200, (url, response.text)
        body = response.json()
        validate_openapi(body, schema)
        return body

    def list_all(self, limit: int) -> list[dict]:
        entries, cursor = [], None
        while True:
            query = {"limit": limit} | ({"cursor": cursor} if cursor else {})
            page = self._call("/v0.1/servers", {}, query, "ServerList")
            entries += page["servers"]
            cursor = (page.get("metadata") or {}).get("nextCursor")
            if not cursor:
                return entries

    def versions(self, name: str) -> dict:
        return self._call("/v0.1/servers/{serverName}/versions", {"serverName": name}, {}, "ServerList")

    def version(self, name: str, version: str) -> dict:
        template = "/v0.1/servers/{serverName}/versions/{version}"
        return self._call(template, {"serverName": name, "version": version}, {}, "ServerResponse")


@pytest.mark.django_db(transaction=True)
def test_a_spec_only_client_lists_pages_and_fetches_every_server(live_server, member, token_for):
    for n in range(23):
        ServerFactory(path=f"/srv{n:02d}", version=f"1.{n}.0")
    ServerFactory(path="/team/weather", version="2.0.0")
    client = SpecClient(live_server.url, token_for(member("ada", "mcp-registry-admin")))

    entries = client.list_all(limit=5)

    names = [entry["server"]["name"] for entry in entries]
    assert len(names) == 24 == len(set(names))
    for entry in entries:
        name, version = entry["server"]["name"], entry["server"]["version"]
        validate_server_json(entry["server"])
        assert client.versions(name)["servers"] == [entry]
        assert client.version(name, "latest") == entry
        assert client.version(name, version) == entry
